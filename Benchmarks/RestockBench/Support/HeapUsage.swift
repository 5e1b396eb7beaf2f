import CHeapStats

/// The heap in use, from glibc's allocator: what a data structure costs in memory, allocator overhead included.
enum HeapUsage {
    static func bytesInUse() -> Int { Int(heap_stats_bytes_in_use()) }
}
