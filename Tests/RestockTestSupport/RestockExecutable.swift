import Foundation

/// The `restock` executable built with the tests: beside the test bundle, or beside the running program.
public let restockExecutable: String = {
    let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? CommandLine.arguments[0])
    var directory = bundle.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("restock").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return "restock"
}()

/// A fresh temporary directory, removed by the caller's `defer`.
public func temporaryDirectory(_ name: String = "restock-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
