import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `DIR/store.lock`, held until ``release()`` or for the life of the process (the kernel
/// releases it when the process dies, however it dies), so two store processes never share one database — unless a
/// standby took the directory's lease over from a process that still holds the lock, frozen (``StoreLease``).
package final class DirectoryLock: OwnershipHold {
    /// The locked descriptor, until released.
    private let descriptor: Mutex<Int32?>
    /// The lock's file name in the data directory.
    static let fileName = "store.lock"

    private init(descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    init(directory: URL) throws {
        let path = directory.appendingPathComponent(Self.fileName).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StorageError.system(.open, path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw RestockMQTTError.dataDirectoryInUse(directory.path)
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Whether a store process holds the lock on `directory` now.
    static func isHeld(on directory: URL) -> Bool {
        let descriptor = open(directory.appendingPathComponent(fileName).path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// Waits until no process holds the lock on `directory`, and takes it: a blocking `flock` on a thread of its own,
    /// which the kernel wakes when the lock is let go (nothing polls). Returns `nil` when the task is cancelled first
    /// (the thread, still waiting, lets the lock go at once if it gets it later) or the lock file cannot be opened.
    static func wait(on directory: URL) async -> DirectoryLock? {
        let path = directory.appendingPathComponent(fileName).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        // The waiter's continuation, taken once: by the thread when it has the lock, or by the cancellation.
        let waiter = Mutex<(continuation: CheckedContinuation<DirectoryLock?, Never>?, cancelled: Bool)>((nil, false))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = waiter.withLock { state in
                    state.continuation = continuation
                    return state.cancelled
                }
                if cancelled {
                    waiter.withLock { $0.continuation = nil }
                    close(descriptor)
                    continuation.resume(returning: nil)
                    return
                }
                let thread = Thread {
                    while flock(descriptor, LOCK_EX) != 0, errno == EINTR {}
                    guard let continuation = waiter.withLock({ state in defer { state.continuation = nil }; return state.continuation }) else {
                        flock(descriptor, LOCK_UN)  // cancelled meanwhile
                        close(descriptor)
                        return
                    }
                    continuation.resume(returning: DirectoryLock(descriptor: descriptor))
                }
                thread.name = "restock.standby-lock"
                thread.start()
            }
        } onCancel: {
            let continuation = waiter.withLock { state in
                state.cancelled = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: nil)
        }
    }

    /// Lets the directory go: another store (in this process too) may open it from now on. Calling it again does
    /// nothing.
    package func release() {
        guard let descriptor = descriptor.withLock({ held in defer { held = nil }; return held }) else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    deinit { release() }
}
