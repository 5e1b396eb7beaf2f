import Foundation
import Synchronization

/// What a finished command printed, and how it ended.
public struct CommandResult: Sendable {
    public let status: Int32
    public let standardOutput: String
    public let standardError: String
}

/// A process the tests start: a broker, a store, a `mosquitto_sub`. It is killed when released.
public final class ChildProcess: Sendable {
    private let process: Process
    private let exited = ExitStatus()
    private let outputFile: URL?

    /// Starts `executable` (a path, or a name looked up on PATH) with `arguments`.
    /// - Parameters:
    ///   - outputFile: Where its standard output and error go; `nil` discards them.
    ///   - input: Bytes written to its standard input, which is then closed.
    public init(
        _ executable: String, _ arguments: [String], outputFile: URL? = nil, environment: [String: String]? = nil,
        input: Data? = nil
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.resolve(executable))
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if let outputFile {
            _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
            let handle = try FileHandle(forWritingTo: outputFile)
            process.standardOutput = handle
            process.standardError = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        let pipe = input.map { _ in Pipe() }
        process.standardInput = pipe ?? FileHandle.nullDevice
        self.process = process
        self.outputFile = outputFile
        let exited = self.exited
        process.terminationHandler = { finished in exited.record(finished.terminationStatus) }
        try process.run()
        if let pipe, let input {
            pipe.fileHandleForWriting.write(input)
            try pipe.fileHandleForWriting.close()
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// The exit status, once it has exited.
    public var exitStatus: Int32? { exited.status }

    /// What it has printed so far (when it prints to a file).
    public var output: String {
        guard let outputFile, let data = try? Data(contentsOf: outputFile) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Sends `signal` (SIGTERM, SIGKILL, SIGINT…).
    public func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for it to exit, up to `seconds`, and returns its status.
    @discardableResult
    public func waitForExit(within seconds: Double = 30) async throws -> Int32 {
        try await waitUntil("process \(pid) to exit", within: seconds) { [self] in exitStatus != nil }
        return exitStatus ?? -1
    }

    /// Runs a command to completion and returns what it printed.
    public static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        within seconds: Double = 60
    ) async throws -> CommandResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try resolve(executable))
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = directory.appendingPathComponent("out"), err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let pipe = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : pipe
        let status = ExitStatus()
        process.terminationHandler = { finished in status.record(finished.terminationStatus) }
        try process.run()
        if let input {
            pipe.fileHandleForWriting.write(input)
            try pipe.fileHandleForWriting.close()
        }
        do {
            try await waitUntil("\(executable) to finish", within: seconds) { status.status != nil }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        return CommandResult(
            status: status.status ?? -1,
            standardOutput: String(decoding: (try? Data(contentsOf: out)) ?? Data(), as: UTF8.self),
            standardError: String(decoding: (try? Data(contentsOf: err)) ?? Data(), as: UTF8.self))
    }

    /// The full path of `name`, searched on PATH when it has no slash.
    public static func resolve(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/sbin", "/sbin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: name])
    }
}

/// A process's exit status, set once from Foundation's termination handler.
final class ExitStatus: Sendable {
    private let value = Mutex<Int32?>(nil)
    func record(_ status: Int32) { value.withLock { $0 = status } }
    var status: Int32? { value.withLock { $0 } }
}
