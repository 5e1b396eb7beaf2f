import Foundation
import Glibc

/// The requests being applied right now (``Attempt``), in the data directory's `attempt` file: three
/// integers written in place, before a batch is applied.
///
/// It only has to outlive the process — it is how the next start knows which requests were being applied
/// when a request killed the store — so it is written to the page cache, never synced, and costs a system call
/// instead of a transaction on the path of every request. Lost with the machine's power, the next start
/// simply applies the batch again as a batch.
final class AttemptRecord: Sendable {
    private let descriptor: Int32
    private let path: String
    private static let size = 3 * MemoryLayout<Int64>.size

    init(directory: URL) throws {
        path = directory.appendingPathComponent("attempt").path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw RestockMQTTError.storage("cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    /// The attempt last recorded; `nil` when none was (or the file holds something else).
    func read() throws -> Attempt? {
        var numbers = [Int64](repeating: 0, count: 3)
        let count = numbers.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Self.size, 0) }
        guard count >= 0 else { throw RestockMQTTError.storage("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard count == Self.size else { return nil }
        let values = numbers.map { Int64(littleEndian: $0) }
        guard values.allSatisfy({ $0 >= 0 }), values[0] <= values[1] else { return nil }
        return Attempt(first: values[0], last: values[1], suspectsThrough: values[2])
    }

    /// Records `attempt` in place.
    func write(_ attempt: Attempt) throws {
        let numbers = [attempt.first, attempt.last, attempt.suspectsThrough].map(\.littleEndian)
        let count = numbers.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, Self.size, 0) }
        guard count == Self.size else { throw RestockMQTTError.storage("cannot write \(path): \(String(cString: strerror(errno)))") }
    }
}
