import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The requests being applied right now (``Attempt``), in the data directory's `attempt` file: three
/// integers written in place before a batch is applied, a byte set if the process dies of a fault while
/// applying it, and a byte that counts earlier deaths without a fault while this one was applied alone.
///
/// It only has to outlive the process — it is how the next start knows which requests were being applied
/// when a request killed the store — so it is written to the page cache, never synced, and costs a system call
/// instead of a transaction on the path of every request. Lost with the machine's power, the next start
/// simply applies the batch again as a batch.
///
/// The fault byte tells a request that crashed the store (a trap, a bad access, an abort: the signals a bug
/// raises) from a store that was killed while it happened to apply one (SIGKILL, the OOM killer, a power cut):
/// only the first sets a request aside.
final class AttemptRecord: Sendable {
    private let descriptor: Int32
    private let path: String
    private static let size = 3 * MemoryLayout<Int64>.size

    init(directory: URL) throws {
        path = directory.appendingPathComponent(DataDirectory.attemptFileName).path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StorageError.system(.open, path, errno: errno) }
    }

    deinit {
        FaultMarker.disarm(descriptor)
        close(descriptor)
    }

    /// The attempt last recorded, and whether the process died of a fault while applying it; `nil` when none
    /// was recorded (or the file holds something else).
    func read() throws -> (attempt: Attempt, faulted: Bool, kills: Int)? {
        var bytes = [UInt8](repeating: 0, count: Self.size + 2)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Self.size + 2, 0) }
        guard count >= 0 else { throw StorageError.system(.read, path, errno: errno) }
        guard count >= Self.size else { return nil }
        let values = (0..<3).map { index in
            bytes.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(fromByteOffset: index * 8, as: Int64.self)) }
        }
        guard values.allSatisfy({ $0 >= 0 }), values[0] <= values[1] else { return nil }
        return (
            Attempt(first: values[0], last: values[1], suspectsThrough: values[2]), count > Self.size && bytes[Self.size] == 1,
            count > Self.size + 1 ? Int(bytes[Self.size + 1]) : 0
        )
    }

    /// Records `attempt` in place, with no fault and `kills` earlier deaths, and arms the fault marker until
    /// ``finished()``.
    func write(_ attempt: Attempt, kills: Int) throws {
        var bytes = [UInt8](repeating: 0, count: Self.size + 2)
        bytes[Self.size + 1] = UInt8(clamping: kills)
        for (index, value) in [attempt.first, attempt.last, attempt.suspectsThrough].enumerated() {
            bytes.withUnsafeMutableBytes { $0.storeBytes(of: value.littleEndian, toByteOffset: index * 8, as: Int64.self) }
        }
        let count = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, Self.size + 2, 0) }
        guard count == Self.size + 2 else { throw StorageError.system(.write, path, errno: count < 0 ? errno : ENOSPC) }
        FaultMarker.arm(descriptor, at: off_t(Self.size))
    }

    /// The attempt is over (committed): a fault from now on is not its requests'.
    func finished() { FaultMarker.disarm(descriptor) }

    /// The attempt failed with an error (the database refused its commit): marked as a fault, since retrying
    /// the same requests fails the same way.
    func failed() {
        FaultMarker.disarm(descriptor)
        var fault: UInt8 = 1
        _ = pwrite(descriptor, &fault, 1, off_t(Self.size))
    }
}

/// The signal handlers that mark the attempt being applied when a fault kills the process: installed by the
/// executable that runs a store (``install()``), never by a library on its own. Without them a request that crashes
/// the store is still found out — after ``RequestProcessor/killsBeforeSetAside`` deaths instead of two.
package enum CrashContainment {
    /// Installs the handlers for SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE and SIGABRT, once per process; each marks
    /// the attempt being applied, then passes the signal on to the handler before it (the Swift runtime's backtrace).
    package static func install() { FaultMarker.install() }
}

/// Sets the fault byte of the attempt being applied when the process gets a signal a bug raises, then lets
/// the signal go on as before (the Swift runtime's backtrace, then death).
private enum FaultMarker {
    /// The descriptor of the armed attempt file, or -1; read in the signal handler.
    private static let armed = Atomic<Int32>(-1)
    private static let offset = Atomic<Int64>(0)
    private static let installed = Mutex(false)
    /// The signals of a crash; SIGKILL cannot be caught, and SIGTERM or SIGINT are a stop, not a fault.
    private static let signals: [Int32] = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT]
    /// The actions before ours, by signal number, put back when ours has run.
    nonisolated(unsafe) private static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)

    static func arm(_ descriptor: Int32, at offset: off_t) {
        self.offset.store(Int64(offset), ordering: .relaxed)
        armed.store(descriptor, ordering: .releasing)
    }

    static func disarm(_ descriptor: Int32) {
        _ = armed.compareExchange(expected: descriptor, desired: -1, ordering: .releasing)
    }

    static func install() {
        installed.withLock { installed in
            guard !installed else { return }
            installed = true
            for signal in signals {
                var action = sigaction()
                action.__sigaction_handler.sa_sigaction = { signal, _, _ in
                    // Async-signal-safe only: an atomic load, pwrite, sigaction.
                    let descriptor = FaultMarker.armed.load(ordering: .acquiring)
                    if descriptor >= 0 {
                        var fault: UInt8 = 1
                        _ = pwrite(descriptor, &fault, 1, off_t(FaultMarker.offset.load(ordering: .relaxed)))
                    }
                    // Back to the action before ours: a fault raised again by the same instruction (or abort's
                    // second raise) goes there.
                    sigaction(signal, FaultMarker.previous.advanced(by: Int(signal)), nil)
                }
                action.sa_flags = SA_SIGINFO | SA_ONSTACK
                sigemptyset(&action.sa_mask)
                sigaction(signal, &action, previous.advanced(by: Int(signal)))
            }
        }
    }
}
