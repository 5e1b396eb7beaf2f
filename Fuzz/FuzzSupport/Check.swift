/// Traps with `message` when `condition` is false, so that libFuzzer reports the input as a crash.
///
/// A violated invariant is a finding: the fuzz targets never recover from one.
@inline(__always)
public func check(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() {
        fatalError("invariant violated: \(message())", file: file, line: line)
    }
}
