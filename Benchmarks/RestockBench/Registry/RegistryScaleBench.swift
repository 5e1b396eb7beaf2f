import Foundation
import RestockCore
import RestockTestSupport
import SeededRandom

/// B2: adds 1,000,000 watches to a Store, then removes them all in random order; the time per operation in
/// each decade of size, and the heap the watches take.
struct RegistryScaleBench {
    static let total = 1_000_000
    /// The decades of size whose operations are timed together: 1–1,000, 1,001–10,000, …
    static let bounds = [0, 1_000, 10_000, 100_000, 1_000_000]
    let runs: Int

    /// 250,000 customers watching 4 of 1,000 SKUs each, made before any timing.
    private struct Workload {
        let customers: [CustomerID]
        let skus: [SKU]
        let removalOrder: [Int]

        init() throws {
            customers = try (0..<RegistryScaleBench.total).map { try CustomerID("c\($0 / 4)") }
            let catalog = try (0..<1_000).map { try SKU("sku-\($0)") }
            skus = (0..<RegistryScaleBench.total).map { catalog[($0 * 7_919) % 1_000] }
            var generator = SplitMix64(seed: 42)
            removalOrder = Array(0..<RegistryScaleBench.total).shuffled(using: &generator)
        }
    }

    struct Result {
        var addNanoseconds: [Samples]
        var removeNanoseconds: [Samples]
        var bytesPerWatch = Samples()
        var bytesLeft = Samples()
    }

    func run(say: (String) -> Void) throws -> Result {
        let workload = try Workload()
        let windows = Self.bounds.count - 1
        var result = Result(
            addNanoseconds: Array(repeating: Samples(), count: windows), removeNanoseconds: Array(repeating: Samples(), count: windows))
        for run in 1...runs {
            let heapBefore = HeapUsage.bytesInUse()
            let store = try Store(id: StoreID("apple"))
            var index = 0
            for window in 0..<windows {
                let start = nanoseconds()
                while index < Self.bounds[window + 1] {
                    try store.subscribe(workload.customers[index], to: workload.skus[index])
                    index += 1
                }
                result.addNanoseconds[window].append(Double(nanoseconds() - start) / Double(Self.bounds[window + 1] - Self.bounds[window]))
            }
            guard store.watchCount == Self.total else { throw BenchFailure("B2 stored \(store.watchCount) watches, expected \(Self.total)") }
            result.bytesPerWatch.append(Double(HeapUsage.bytesInUse() - heapBefore) / Double(Self.total))

            // Removal, in random order, timed by the decade the size falls through: 1,000,000 → 100,000, …
            var removed = 0
            for window in (0..<windows).reversed() {
                let start = nanoseconds()
                while Self.total - removed > Self.bounds[window] {
                    let victim = workload.removalOrder[removed]
                    guard store.unsubscribe(workload.customers[victim], from: workload.skus[victim]) != nil else {
                        throw BenchFailure("B2 watch \(victim) was not there to remove")
                    }
                    removed += 1
                }
                result.removeNanoseconds[window].append(Double(nanoseconds() - start) / Double(Self.bounds[window + 1] - Self.bounds[window]))
            }
            guard store.watchCount == 0 else { throw BenchFailure("B2 left \(store.watchCount) watches") }
            result.bytesLeft.append(Double(HeapUsage.bytesInUse() - heapBefore))
            say("  B2 run \(run): add \(result.addNanoseconds.map { Figure.format($0.values.last!) }.joined(separator: " / ")) ns · remove \(result.removeNanoseconds.map { Figure.format($0.values.last!) }.joined(separator: " / ")) ns · \(Figure.format(result.bytesPerWatch.values.last!)) B/watch")
        }
        return result
    }
}
