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

    @Test("a restore of tens of thousands of watches (its two tables built on two threads) equals the store it was taken from, and goes on alike")
    func largeRestore() throws {
        let original = makeStore(alertsPerUnit: 1)
        let skus = (0..<7).map { sku("s\($0)") }
        var random = SplitMix(seed: 7)
        for index in 0..<4_000 {
            for offset in 0..<3 {
                let what = skus[(index + offset * 2) % skus.count]
                try original.subscribe(customer("c\(index)"), to: what, mode: random.next(below: 2) == 0 ? .once : .every, minQuantity: 1 + random.next(below: 3))
            }
        }
        for what in skus.prefix(4) { try original.changeStock(of: what, .set(1 + random.next(below: 3))) }  // some alerted, some held back
        let snapshot = original.snapshot
        #expect(snapshot.watches.count >= 10_000, "the two-thread restore is taken from 10,000 watches on")
        let shuffled = StoreSnapshot(
            watches: snapshot.watches.reversed(), inventory: snapshot.inventory, nextPosition: snapshot.nextPosition,
            nextAlertSequence: snapshot.nextAlertSequence)
        for restoring in [snapshot, shuffled] {
            let restored = try Store(id: storeID(), alertsPerUnit: 1, restoring: restoring, clock: { fixedDate })
            #expect(restored.watchCount == original.watchCount && restored.customerCount == original.customerCount)
            for what in skus { #expect(restored.watchers(of: what) == original.watchers(of: what)) }
            for index in stride(from: 0, to: 4_000, by: 97) {
                #expect(restored.watchlist(of: customer("c\(index)")) == original.watchlist(of: customer("c\(index)")))
            }
            #expect(restored.counters == original.counters)
        }
        // Held-back watches queue alike: both stores raise the same alerts on the next rises.
        let restored = try Store(id: storeID(), alertsPerUnit: 1, restoring: snapshot, clock: { fixedDate })
        for what in skus {
            #expect(try restored.changeStock(of: what, .add(3)) == original.changeStock(of: what, .add(3)))
        }
    }

    @Test("a snapshot's positions and counters past 2^62 are not counted on from: its watch is left out, its counters taken as the bound, and the store goes on without trapping; past the last position it takes no new watch, which the next restore would leave out")
    func valuesPastTheBound() throws {
        let bound = StoreSnapshot.maximumCounter
        let kept = Watch(customer: customer("kept"), sku: sku("ipad"), mode: .every, minQuantity: 1, position: bound, since: fixedDate)
        let past = Watch(customer: customer("past"), sku: sku("ipad"), mode: .every, minQuantity: 1, position: .max, since: fixedDate)
        let snapshot = StoreSnapshot(watches: [kept, past], nextPosition: .max, nextAlertSequence: .max)
        let store = try Store(id: storeID(), restoring: snapshot, clock: { fixedDate })
        #expect(store.watchers(of: sku("ipad")).map(\.customer) == [customer("kept")])
        #expect(store.snapshot.nextPosition == bound + 1)
        #expect(store.snapshot.nextAlertSequence == bound)
        // No new watch past the last position (found by an outside trial: it was taken, and left out at the next
        // restore); the alerts go on where they would have overflowed.
        #expect(throws: RestockError.noPositionLeft) { try store.subscribe(customer("next"), to: sku("ipad"), mode: .every) }
        let outcome = try store.changeStock(of: sku("ipad"), .set(1))
        #expect(outcome.alerts.map(\.sequence) == [bound])
        #expect(store.snapshot.nextAlertSequence == bound + 1)
    }
}
