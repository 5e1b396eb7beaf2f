import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `DIR/store.lock`, held until ``release()`` or for the life of the process (the kernel
/// releases it when the process dies, however it dies), so two store processes never share one database.
final class DirectoryLock: Sendable {
    /// The locked descriptor, until released.
    private let descriptor: Mutex<Int32?>
    /// The lock's file name in the data directory.
    static let fileName = "store.lock"

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

    /// Lets the directory go: another store (in this process too) may open it from now on. Calling it again does
    /// nothing.
    func release() {
        guard let descriptor = descriptor.withLock({ held in defer { held = nil }; return held }) else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    deinit { release() }
}
