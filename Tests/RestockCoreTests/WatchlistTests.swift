import Testing
@testable import RestockCore

@Suite("A customer's watch list against a plain set")
struct WatchlistTests {
    @Test("random inserts and removes across its three forms (one SKU, a few, many): the same SKUs and count as a Set, and whether any is left")
    func agreesWithASet() {
        let skus = (0..<(Watchlist.arrayLimit * 2)).map { sku("s\($0)") }
        for seed in UInt64(0)..<50 {
            var random = SplitMix(seed: seed)
            var list = Watchlist(skus[0]), model: Set<SKU> = [skus[0]]
            for step in 0..<300 {
                let what = skus[random.next(below: skus.count)]
                if random.next(below: 3) == 0, model.count > 1 || model.contains(what) {
                    let left = list.remove(what)
                    model.remove(what)
                    #expect(left == !model.isEmpty, "seed \(seed), step \(step)")
                    if model.isEmpty { break }
                } else {
                    list.insert(what)
                    model.insert(what)
                }
                #expect(list.count == model.count && Set(list.skus) == model && list.skus.count == model.count, "seed \(seed), step \(step)")
            }
        }
    }
}
