import Testing
@testable import RestockCore

@Suite("Snapshot and restore")
struct SnapshotTests {
    @Test("a restored store has every watch, position, quantity and counter, and goes on alike")
    func restore() throws {
        let original = makeStore(alertsPerUnit: 1)
        for index in 0..<6 { try original.subscribe(customer("c\(index)"), to: sku("ipad"), mode: index % 2 == 0 ? .once : .every) }
        try original.subscribe(customer("c0"), to: sku("mac"), minQuantity: 3)
        try original.changeStock(of: sku("ipad"), .set(2))  // c0, c1 alerted; the rest held back
        let restored = try Store(id: storeID(), alertsPerUnit: 1, restoring: original.snapshot, clock: { fixedDate })

        #expect(restored.watchers(of: sku("ipad")) == original.watchers(of: sku("ipad")))
        #expect(restored.watchlist(of: customer("c0")) == original.watchlist(of: customer("c0")))
        #expect(restored.inventory == original.inventory)
        // Held-back watches still queue newcomers, and both stores raise the same next alerts.
        let late = try restored.subscribe(customer("late"), to: sku("ipad"))
        #expect(late.alert == nil)
        try original.subscribe(customer("late"), to: sku("ipad"))
        #expect(try restored.changeStock(of: sku("ipad"), .add(2)) == original.changeStock(of: sku("ipad"), .add(2)))
    }
}
