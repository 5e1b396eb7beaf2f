/// libFuzzer's own driver (in the toolchain's `libclang_rt.fuzzer`, linked by `-sanitize=fuzzer`).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The signature of `LLVMFuzzerTestOneInput`.
public typealias FuzzTestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Hands the process over to libFuzzer, which then calls `testOneInput` for each input.
///
/// Why this is needed: SwiftPM links every executable on Linux with `--defsym main=<Module>_main`, so that
/// tests can call an executable's entry point under another name. A module compiled with `-parse-as-library`
/// (as a fuzz target must be, so it has no `main` of its own) defines no `<Module>_main`, and the link fails
/// with "undefined symbol '<Module>_main' referenced in expression". Each target therefore defines
/// `<Module>_main` with `@_cdecl` and calls this, which does exactly what libFuzzer's own `main` does.
public func runLibFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ testOneInput: FuzzTestOneInput
) -> CInt {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector, testOneInput)
}
