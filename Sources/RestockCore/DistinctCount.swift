import Foundation

/// An estimate of how many distinct customers a list of watches has (HyperLogLog: 4,096 registers, a standard error
/// of about 1.6%), so that a restart sizes its table of watch lists once, for as many customers as there are: a
/// table sized too small grows and hashes every key again (a third of the build's time with B2's million customers,
/// docs/benchmarks.md), one sized for every watch wastes half or more when customers watch several SKUs.
///
/// The hash is FNV-1a over the identifier's bytes, mixed (SplitMix64's finalizer): the same in every process, and a
/// few nanoseconds per short identifier. Identifiers chosen to collide only make the estimate low: the table then
/// grows, as it would without it.
struct DistinctCount {
    private static let bits = 12
    private var registers = [UInt8](repeating: 0, count: 1 << bits)

    /// Counts `text` once, however often it is added.
    mutating func add(_ text: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        let register = Int(hash >> UInt64(64 - Self.bits))
        // The rank of the first set bit among the rest (the register's index bits shifted out): 1 + leading zeros.
        let rank = UInt8(min((hash << UInt64(Self.bits)).leadingZeroBitCount, 64 - Self.bits) + 1)
        if rank > registers[register] { registers[register] = rank }
    }

    /// About how many distinct texts were added.
    var estimate: Int {
        let m = Double(registers.count)
        let sum = registers.reduce(0.0) { $0 + 1 / Double(UInt64(1) << UInt64($1)) }
        let raw = 0.7213 / (1 + 1.079 / m) * m * m / sum
        let empty = registers.count { $0 == 0 }
        // Few texts: linear counting over the empty registers is the better estimate.
        if raw <= 2.5 * m, empty > 0 { return Int((m * log(m / Double(empty))).rounded()) }
        return Int(raw.rounded())
    }
}
