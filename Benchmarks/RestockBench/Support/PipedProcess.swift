import Foundation
import RestockTestSupport
import Synchronization
import Deadlines
import LocalBroker

/// A child process (mosquitto_pub -l, mosquitto_sub) whose standard input the benchmark writes and whose
/// standard output it reads line by line on a thread of its own, each line stamped with when it was read.
final class PipedProcess: Sendable {
    let pid: pid_t
    private let input: Int32
    private let exited = Mutex(false)

    /// Starts `executable` and calls `onLine` with every line it prints and the `nanoseconds()` it arrived.
    init(_ executable: String, _ arguments: [String], onLine: @escaping @Sendable ([UInt8], UInt64) -> Void = { _, _ in }) throws {
        let path = try ChildProcess.resolve(executable)
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        for descriptor in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, descriptor) }
        let spawned = ChildProcess.spawn(path, arguments, actions: &actions)
        close(toChild[0])
        close(fromChild[1])
        do {
            pid = try spawned.get()
        } catch {
            close(toChild[1])
            close(fromChild[0])
            throw error
        }
        self.input = toChild[1]
        let descriptor = fromChild[0]
        Thread.detachNewThread {
            defer { close(descriptor) }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                let now = nanoseconds()
                var start = 0
                for index in 0..<count where buffer[index] == UInt8(ascii: "\n") {
                    pending += buffer[start..<index]
                    onLine(pending, now)
                    pending.removeAll(keepingCapacity: true)
                    start = index + 1
                }
                pending += buffer[start..<count]
            }
        }
    }

    /// Writes to its standard input.
    func write(_ data: Data) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(input, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// Writes one line.
    func write(line: String) { write(Data((line + "\n").utf8)) }

    /// Closes its standard input (mosquitto_pub -l then finishes and exits).
    func closeInput() { close(input) }

    /// Whether it has exited (reaping it if so).
    var hasExited: Bool {
        exited.withLock { exited in
            if !exited {
                var status: Int32 = 0
                exited = waitpid(pid, &status, WNOHANG) == pid
            }
            return exited
        }
    }

    /// Waits for it to exit on its own, up to `seconds`.
    func waitForExit(within seconds: Double) async throws {
        try await waitUntil("process \(pid) to exit", within: seconds) { [self] in hasExited }
    }

    /// Stops it (SIGTERM) and reaps it.
    func stop() {
        guard !hasExited else { return }
        kill(pid, SIGTERM)
        exited.withLock { exited in
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            exited = true
        }
    }

    deinit { stop() }
}
