import Testing
@testable import RestockCore
import SeededRandom

@Suite("Registry at scale")
struct RegistryScaleTests {
    @Test("adding and removing 100,000 watches keeps every index consistent and in order")
    func hundredThousand() throws {
        let store = makeStore()
        let skus = (0..<100).map { sku("sku\($0)") }
        var random = SplitMix(seed: 42)
        var expected: [SKU: [CustomerID]] = [:]
        for index in 0..<100_000 {
            let item = skus[random.next(below: skus.count)]
            let who = customer("c\(index)")
            try store.subscribe(who, to: item)
            expected[item, default: []].append(who)
        }
        #expect(store.watchCount == 100_000)

        // Remove every other watch of each SKU, from the middle of the lines.
        for item in skus {
            for (offset, who) in expected[item, default: []].enumerated() where offset % 2 == 1 {
                #expect(store.unsubscribe(who, from: item) != nil)
            }
            expected[item] = expected[item, default: []].enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        }
        #expect(store.watchCount == expected.values.map(\.count).reduce(0, +))
        for item in skus {
            let line = store.watchers(of: item)
            #expect(line.map(\.customer) == expected[item, default: []])
            #expect(zip(line, line.dropFirst()).allSatisfy { $0.position < $1.position })
        }

        for item in skus {
            for who in expected[item, default: []] { store.unsubscribe(who, from: item) }
        }
        #expect(store.watchCount == 0)
        #expect(skus.allSatisfy { store.watchers(of: $0).isEmpty })
        let rejoined = try store.subscribe(customer("c0"), to: skus[0])
        #expect(rejoined.watch.position == 100_001)
    }

    @Test("the ordered dictionary compacts its tombstones and keeps order")
    func compaction() {
        var dictionary = InsertionOrderedDictionary<Int, Int>()
        for key in 0..<1_000 { dictionary.updateValue(key * 10, forKey: key) }
        for key in 0..<1_000 where key % 3 != 0 { dictionary.removeValue(forKey: key) }
        #expect(dictionary.count == 334)
        #expect(dictionary.values == stride(from: 0, to: 1_000, by: 3).map { $0 * 10 })
        #expect(dictionary[999] == 9_990 && dictionary[998] == nil)
        dictionary.updateValue(1, forKey: 0)
        #expect(dictionary.values.first == 1)
    }
}
