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

    @Test("a snapshot's positions and counters past 2^62 are not counted on from: its watch is left out, its counters taken as one past the bound (none left), and the store goes on without trapping; past the last position it takes no new watch, which the next restore would leave out, and past the last alert sequence it raises no alert")
    func valuesPastTheBound() throws {
        let bound = StoreSnapshot.maximumCounter
        let kept = Watch(customer: customer("kept"), sku: sku("ipad"), mode: .every, minQuantity: 1, position: bound, since: fixedDate)
        let past = Watch(customer: customer("past"), sku: sku("ipad"), mode: .every, minQuantity: 1, position: .max, since: fixedDate)
        let snapshot = StoreSnapshot(watches: [kept, past], nextPosition: .max, nextAlertSequence: .max)
        let store = try Store(id: storeID(), restoring: snapshot, clock: { fixedDate })
        #expect(store.watchers(of: sku("ipad")).map(\.customer) == [customer("kept")])
        #expect(store.snapshot.nextPosition == bound + 1)
        #expect(store.snapshot.nextAlertSequence == bound + 1)
        // No new watch past the last position (found by an outside trial: it was taken, and left out at the next
        // restore); no alert past the last sequence (its id might be one given out already): the stock is taken, the
        // watch waits.
        #expect(throws: RestockError.noPositionLeft) { try store.subscribe(customer("next"), to: sku("ipad"), mode: .every) }
        let outcome = try store.changeStock(of: sku("ipad"), .set(1))
        #expect(outcome.alerts.isEmpty && outcome.alertsWithheld == 1 && store.quantity(of: sku("ipad")) == 1)
        #expect(store.watch(customer("kept"), of: sku("ipad"))?.isWaiting == true)
        #expect(store.snapshot.nextAlertSequence == bound + 1)
    }

    @Test("the last alert sequence is given out once: a restore keeps the next sequence one past the bound, and the store raises no more alerts; a satisfied watch stays waiting, and the stock change or subscribe says so (found by an outside trial: the restore took the next sequence back to the bound, and two alerts had the id apple-4611686018427387904)")
    func lastAlertSequenceGivenOutOnce() throws {
        let bound = StoreSnapshot.maximumCounter
        let first = try Store(id: storeID(), restoring: StoreSnapshot(nextAlertSequence: bound - 1), clock: { fixedDate })
        for name in ["alice", "bob", "carol"] { try first.subscribe(customer(name), to: sku("ipad")) }
        // A change that would raise three alerts raises the two with sequences left; the third watch waits.
        let last = try first.changeStock(of: sku("ipad"), .set(1))
        #expect(last.alerts.map(\.id) == ["apple-\(bound - 1)", "apple-\(bound)"] && last.alertsWithheld == 1)
        #expect(first.watchers(of: sku("ipad")).map(\.customer) == [customer("carol")])
        #expect(first.counters.nextAlertSequence == bound + 1)

        let restored = try Store(id: storeID(), restoring: first.snapshot, clock: { fixedDate })
        #expect(restored.counters.nextAlertSequence == bound + 1)
        try restored.subscribe(customer("dave"), to: sku("ipad"), minQuantity: 2)
        let change = try restored.changeStock(of: sku("ipad"), .set(2))
        #expect(change.alerts.isEmpty && change.alertsWithheld == 2 && change.quantity == 2)
        #expect(restored.watchers(of: sku("ipad")).map(\.isWaiting) == [true, true])
        let erin = try restored.subscribe(customer("erin"), to: sku("ipad"))
        #expect(erin.alert == nil && erin.isAlertWithheld && erin.isKept && erin.watch.isWaiting)
        #expect(restored.counters.nextAlertSequence == bound + 1)
    }

    @Test("the last position is given out once: a store that gave it to a watch no longer kept (a once watch alerted at subscribe) restores its next position one past the bound, and takes no new watch (it was taken back to the bound, and the position given again)")
    func lastPositionGivenOutOnce() throws {
        let bound = StoreSnapshot.maximumCounter
        let first = try Store(
            id: storeID(), restoring: StoreSnapshot(inventory: [sku("ipad"): 1], nextPosition: bound), clock: { fixedDate })
        let alice = try first.subscribe(customer("alice"), to: sku("ipad"))
        #expect(alice.alert?.position == bound && !alice.isKept)
        let restored = try Store(id: storeID(), restoring: first.snapshot, clock: { fixedDate })
        #expect(restored.counters.nextPosition == bound + 1)
        #expect(throws: RestockError.noPositionLeft) { try restored.subscribe(customer("bob"), to: sku("ipad")) }
    }

    @Test("a restore leaves out the watches no subscribe could have made: a minQuantity outside 1 through 1,000,000,000, and a second watch of one customer and SKU, the lowest position kept; their positions are not given out again (found by an outside trial: a minQuantity of 0 was alerted at a quantity of 0, and a repeated watch put the alerts out of signup order)")
    func invalidWatchesLeftOut() throws {
        func watch(_ name: String, _ position: UInt64, minQuantity: Int = 1) -> Watch {
            Watch(customer: customer(name), sku: sku("ipad"), mode: .every, minQuantity: minQuantity, position: position, since: fixedDate)
        }
        let snapshot = StoreSnapshot(
            watches: [
                watch("alice", 5), watch("bob", 3), watch("alice", 1, minQuantity: 2), watch("zero", 2, minQuantity: 0),
                watch("lowest", 4, minQuantity: .min), watch("over", 8, minQuantity: Store.maximumQuantity + 1),
                watch("most", 7, minQuantity: Store.maximumQuantity),
            ],
            inventory: [sku("ipad"): 1], nextPosition: 1)
        let store = try Store(id: storeID(), restoring: snapshot, clock: { fixedDate })
        #expect(store.watchers(of: sku("ipad")).map(\.position) == [1, 3, 7])
        #expect(store.watch(customer("alice"), of: sku("ipad"))?.minQuantity == 2)
        #expect(store.watchCount == 3 && store.watchCount(of: customer("alice")) == 1 && store.customerCount == 3)
        #expect(store.counters.nextPosition == 9)
        #expect(try store.changeStock(of: sku("ipad"), .set(0)).alerts.isEmpty)
        let alerts = try store.changeStock(of: sku("ipad"), .set(2)).alerts
        #expect(alerts.map(\.customer.rawValue) == ["alice", "bob"] && alerts.map(\.position) == [1, 3])
    }
}
