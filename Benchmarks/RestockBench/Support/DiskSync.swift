import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What one `fdatasync` costs on a disk: issue 35's floor of an alert's path is two trips through the broker and one
/// of these (a request must be durable on the data disk before the broker counts it delivered).
enum DiskSync {
    /// The median of `times` page writes each followed by `fdatasync`, in µs, in a scratch file in `directory` (the
    /// store's data directory: the disk its files are on), which is removed after. Back to back, or one every `pace`
    /// (a disk that idles between syncs syncs slower: the store's log syncs at the pace of its requests).
    static func medianMicroseconds(in directory: URL, times: Int = 200, pace: Duration? = nil) async throws -> Double {
        let path = directory.appendingPathComponent("bench-fdatasync-probe").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BenchFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer {
            close(descriptor)
            unlink(path)
        }
        let page = [UInt8](repeating: 0x5A, count: 4_096)
        var samples = Samples()
        let clock = ContinuousClock()
        var tick = clock.now
        for index in 0..<times {
            if let pace {
                try await clock.sleep(until: tick)  // pacing: the disk left idle as between the store's syncs
                tick = tick.advanced(by: pace)
            }
            let start = nanoseconds()
            // A page appended each time, as a log's commit does: the file's size changes, as the journal's WAL does.
            let written = page.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(index * page.count)) }
            guard written == page.count, fdatasync(descriptor) == 0 else {
                throw BenchFailure("cannot write and sync \(path): \(String(cString: strerror(errno)))")
            }
            samples.append(Double(nanoseconds() - start) / 1_000)
        }
        return samples.median
    }
}
