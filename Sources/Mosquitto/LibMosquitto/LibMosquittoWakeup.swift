#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The network thread's own wakeup: a non-blocking pipe that any thread signals (an operation queued, a stop, a
/// reconnect allowed) and the thread watches in its `poll`, beside the socket. libmosquitto's own socket pair does
/// this inside `mosquitto_loop`, which the thread no longer runs, and it cannot be reached from outside.
final class LibMosquittoWakeup: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    /// Makes the pipe; `nil` when the process has no file descriptor left.
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// The descriptor to watch for reading.
    var descriptor: Int32 { readEnd }

    /// Wakes the thread. A full pipe already will.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe, after `poll` found it readable.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Waits until signalled or `seconds` pass, and empties the pipe.
    func wait(seconds: Double) {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, Int32(max(0, min(seconds * 1_000, 3_600_000)).rounded(.up)))
        drain()
    }
}
