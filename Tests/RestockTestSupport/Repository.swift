import Foundation

/// The repository's checkout, for the files the tests and benchmarks run as shipped (deploy/).
public enum Repository {
    /// Where this file was compiled; or, for a binary built elsewhere, the current directory, which `make` runs it from
    /// (CI builds the benchmarks in the image's build stage, at /src: found when B6 looked for deploy/nats there).
    public static let root: URL = {
        let compiled = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return [compiled, current].first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("deploy").path) } ?? compiled
    }()
}
