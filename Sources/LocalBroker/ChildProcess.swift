import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import Deadlines

/// What a finished command printed, and how it ended.
public struct CommandResult: Sendable {
    /// The exit status, or 128 + the signal that killed it.
    public let status: Int32
    /// What it printed on standard output.
    public let standardOutput: String
    /// What it printed on standard error.
    public let standardError: String
}

/// A process the tests start: a broker, a store, a `mosquitto_sub`. It is killed when released.
///
/// Started with `posix_spawn` and an empty signal mask with default dispositions: a test runner blocks
/// SIGTERM and SIGINT in its threads, and a child that inherited that mask would ignore them.
public final class ChildProcess: Sendable {
    /// The process id.
    public let pid: pid_t
    private let exit = ExitStatus()
    private let outputFile: URL?
    /// Whom signals go to: the process, or (`-pid`) the process group it leads.
    private let signalTarget: pid_t

    /// Starts `executable` (a path, or a name looked up on PATH) with `arguments`.
    /// - Parameters:
    ///   - outputFile: Where its standard output and error go; `nil` discards them.
    ///   - errorFile: Where its standard error goes, when apart from its output.
    ///   - environment: Variables added to this process's environment.
    ///   - input: Bytes written to its standard input, which is then closed.
    ///   - ownProcessGroup: Whether it leads a process group of its own, and signals go to the whole group: for a
    ///     wrapper that runs the real program as its child and does not pass every signal on (`faketime`), so that
    ///     killing it never leaves the program running, orphaned.
    public init(
        _ executable: String, _ arguments: [String], outputFile: URL? = nil, errorFile: URL? = nil,
        environment: [String: String] = [:], input: Data? = nil, ownProcessGroup: Bool = false
    ) throws {
        self.outputFile = outputFile
        let path = try Self.resolve(executable)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var inputPipe: [Int32] = [-1, -1]
        if input != nil {
            guard pipe(&inputPipe) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, inputPipe[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, outputFile?.path ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let errorFile {
            posix_spawn_file_actions_addopen(&actions, 2, errorFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }

        // Nothing else of this process's: a socket or a lock of the caller's that a child kept open would outlive the
        // caller's close (a client released in a test whose connection the broker never saw end, while another test's
        // child held the socket).
        _ = Self.closeFrom?(&actions, 3)
        let spawned = Self.spawn(path, arguments, actions: &actions, environment: environment, ownProcessGroup: ownProcessGroup)
        if input != nil { close(inputPipe[0]) }
        do {
            pid = try spawned.get()
            signalTarget = ownProcessGroup ? -pid : pid
        } catch {
            if input != nil { close(inputPipe[1]) }
            throw error
        }
        if let input {
            // Written from another thread, so a child that reads slowly never blocks the caller.
            let writeEnd = inputPipe[1]
            Thread.detachNewThread {
                input.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = write(writeEnd, bytes.baseAddress! + offset, bytes.count - offset)
                        if written <= 0 { break }
                        offset += written
                    }
                }
                close(writeEnd)
            }
        }
    }

    deinit {
        // The group even when its leader has exited: what it started may still run.
        if signalTarget < 0 { Glibc.kill(signalTarget, SIGKILL) }
        if exitStatus == nil {
            Glibc.kill(signalTarget, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// The exit status (or 128 + signal), once it has exited; reaps the process.
    public var exitStatus: Int32? {
        exit.withStatus { recorded in
            if let recorded { return recorded }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            recorded = code
            return code
        }
    }

    /// Whether it still runs.
    public var isRunning: Bool { exitStatus == nil }

    /// What it has printed so far (when it prints to a file).
    public var output: String {
        guard let outputFile, let data = try? Data(contentsOf: outputFile) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Sends `signal` (SIGTERM, SIGKILL, SIGINT…) if it still runs.
    public func send(_ signal: Int32) {
        if isRunning { Glibc.kill(signalTarget, signal) }
    }

    /// Waits for it to exit, up to `seconds`, and returns its status.
    @discardableResult
    public func waitForExit(within seconds: Double = 30) async throws -> Int32 {
        try await waitUntil("process \(pid) to exit", within: seconds) { [self] in exitStatus != nil }
        return exitStatus ?? -1
    }

    /// Runs a command to completion and returns what it printed.
    public static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        within seconds: Double = 60, ownProcessGroup: Bool = false
    ) async throws -> CommandResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out"), err = directory.appendingPathComponent("err")
        let child = try ChildProcess(
            executable, arguments, outputFile: out, errorFile: err, environment: environment, input: input,
            ownProcessGroup: ownProcessGroup)
        let status = try await child.waitForExit(within: seconds)
        return CommandResult(
            status: status,
            standardOutput: String(decoding: (try? Data(contentsOf: out)) ?? Data(), as: UTF8.self),
            standardError: String(decoding: (try? Data(contentsOf: err)) ?? Data(), as: UTF8.self))
    }

    /// Starts `path` with `arguments` and the file actions given, with no signal blocked and the usual signals
    /// at their default handlers whatever the calling thread has, and this process's environment plus `environment`;
    /// in a process group of its own when `ownProcessGroup`.
    public static func spawn(
        _ path: String, _ arguments: [String], actions: inout posix_spawn_file_actions_t, environment: [String: String] = [:],
        ownProcessGroup: Bool = false
    ) -> Result<pid_t, POSIXError> {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let environmentLines = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStrings([path] + arguments) { argv in
            withCStrings(environmentLines) { envp in posix_spawn(&pid, path, &actions, &attributes, argv, envp) }
        }
        return status == 0 ? .success(pid) : .failure(POSIXError(.init(rawValue: status) ?? .EIO))
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its Swift module does not show; `nil`
    /// where the C library has none.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The full path of `name`, searched on PATH when it has no slash.
    public static func resolve(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: name])
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// A process's exit status, recorded once it has been reaped.
final class ExitStatus: Sendable {
    private let value = Mutex<Int32?>(nil)
    func withStatus<R>(_ body: (inout Int32?) -> R) -> R { value.withLock { body(&$0) } }
}
