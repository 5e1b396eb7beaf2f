import Foundation
import Testing
@testable import RestockCore

@Suite("Per-customer watch limit")
struct WatchLimitTests {
    let alice = customer("alice")
    let bob = customer("bob")

    func limitedStore(_ limit: Int, alertsPerUnit: Int = 0, restoring snapshot: StoreSnapshot? = nil) throws -> Store {
        try Store(
            id: storeID(), alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: limit, restoring: snapshot,
            clock: { fixedDate })
    }

    /// Subscribes `who` to `sku0` … `sku(count-1)`.
    func fill(_ store: Store, _ who: CustomerID, count: Int, mode: WatchMode = .once) throws {
        for index in 0..<count { try store.subscribe(who, to: sku("sku\(index)"), mode: mode) }
    }

    @Test("a new watch past the limit is refused with too-many-watches and changes nothing")
    func atTheLimit() throws {
        let store = try limitedStore(3)
        try fill(store, alice, count: 3)
        try store.changeStock(of: sku("tv"), .set(5))
        let before = store.snapshot
        let counters = store.counters

        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 3, limit: 3)) {
            try store.subscribe(alice, to: sku("phone"), mode: .every)
        }
        // Satisfied at once but kept (`every`): refused too, and no alert is raised.
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 3, limit: 3)) {
            try store.subscribe(alice, to: sku("tv"), mode: .every)
        }
        #expect(store.snapshot == before)
        #expect(store.counters == counters)
        #expect(store.watchCount(of: alice) == 3)

        // Another customer is not affected.
        #expect(try store.subscribe(bob, to: sku("phone")).isNew)
        #expect(store.watchCount(of: bob) == 1)
    }

    @Test("the refusal names the customer and the limit and says what to do")
    func refusalText() {
        let error = RestockError.tooManyWatches(customer: customer("alice"), watching: 100, limit: 100)
        #expect(error.code == "too-many-watches")
        #expect(error.description == "alice already watches 100 SKUs, the most one customer may watch: unsubscribe from one first")
        #expect(
            RestockError.tooManyWatches(customer: customer("bob"), watching: 1, limit: 1).description
                == "bob already watches 1 SKU, the most one customer may watch: unsubscribe from one first")
        #expect(
            RestockError.tooManyWatches(customer: customer("carol"), watching: 150, limit: 100).description
                == "carol already watches 150 SKUs, more than the 100 one customer may watch: unsubscribe from 51 first")
    }

    @Test("the default limit is 100")
    func defaultLimit() throws {
        let store = makeStore()
        #expect(store.maximumWatchesPerCustomer == 100)
        try fill(store, alice, count: 100)
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 100, limit: 100)) {
            try store.subscribe(alice, to: sku("one-more"))
        }
        #expect(store.watchCount == 100)
    }

    @Test("the limit must be 1 through 1,000,000", arguments: [0, -1, 1_000_001, Int.min, Int.max])
    func invalidLimit(_ limit: Int) {
        #expect(throws: RestockError.invalidMaximumWatchesPerCustomer(limit)) { try limitedStore(limit) }
        #expect(RestockError.invalidMaximumWatchesPerCustomer(limit).code == "invalid-maximum-watches-per-customer")
        #expect(
            RestockError.invalidMaximumWatchesPerCustomer(0).description
                == "invalid maximumWatchesPerCustomer 0: use 1 through 1000000")
    }

    @Test("the limits of the range are accepted", arguments: [1, 1_000_000])
    func validLimit(_ limit: Int) throws {
        #expect(try limitedStore(limit).maximumWatchesPerCustomer == limit)
    }

    @Test("new terms for a SKU already watched are taken at the limit, and keep the position")
    func resubscribeAtTheLimit() throws {
        let store = try limitedStore(2)
        try fill(store, alice, count: 2)
        let first = try #require(store.watch(alice, of: sku("sku0")))

        let same = try store.subscribe(alice, to: sku("sku0"))
        #expect(!same.isChanged)
        let changed = try store.subscribe(alice, to: sku("sku0"), mode: .every, minQuantity: 4)
        #expect(changed.isChanged && !changed.isNew && changed.isKept)
        #expect(store.watch(alice, of: sku("sku0"))?.position == first.position)
        #expect(store.watch(alice, of: sku("sku0"))?.minQuantity == 4)
        #expect(store.watchCount(of: alice) == 2)
    }

    @Test("unsubscribing makes room for a new watch")
    func afterUnsubscribe() throws {
        let store = try limitedStore(2)
        try fill(store, alice, count: 2)
        #expect(throws: RestockError.self) { try store.subscribe(alice, to: sku("new")) }

        store.unsubscribe(alice, from: sku("sku1"))
        #expect(store.watchCount(of: alice) == 1)
        #expect(try store.subscribe(alice, to: sku("new")).isNew)
        #expect(throws: RestockError.self) { try store.subscribe(alice, to: sku("newer")) }

        #expect(store.unsubscribeAll(alice).count == 2)
        #expect(store.watchCount(of: alice) == 0)
        try fill(store, alice, count: 2)
        #expect(store.watchCount(of: alice) == 2)
    }

    @Test("a once watch ended by its alert makes room; an every watch alerted stays and counts")
    func afterOnceAlert() throws {
        let store = try limitedStore(2)
        try store.subscribe(alice, to: sku("ipad"), mode: .once)
        try store.subscribe(alice, to: sku("mac"), mode: .every)
        try store.changeStock(of: sku("mac"), .set(1))
        #expect(store.watchCount(of: alice) == 2)
        #expect(throws: RestockError.self) { try store.subscribe(alice, to: sku("tv")) }

        let outcome = try store.changeStock(of: sku("ipad"), .set(1))
        #expect(outcome.removedWatches.map(\.customer) == [alice])
        #expect(store.watchCount(of: alice) == 1)
        #expect(try store.subscribe(alice, to: sku("tv")).isKept)
    }

    @Test("a once watch satisfied at once is taken at the limit: alerted, not kept")
    func onceSatisfiedAtTheLimit() throws {
        let store = try limitedStore(1)
        try store.subscribe(alice, to: sku("ipad"))
        try store.changeStock(of: sku("mac"), .set(3))
        let counters = store.counters

        let outcome = try store.subscribe(alice, to: sku("mac"), mode: .once, minQuantity: 3)
        #expect(outcome.alert?.customer == alice && !outcome.isKept)
        #expect(store.counters.nextAlertSequence == counters.nextAlertSequence + 1)
        #expect(store.watchCount(of: alice) == 1)
        #expect(store.watchlist(of: alice).map(\.sku) == [sku("ipad")])

        // Not satisfied (minQuantity above the stock): it would be kept, so it is refused.
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 1, limit: 1)) {
            try store.subscribe(alice, to: sku("mac"), mode: .once, minQuantity: 4)
        }
    }

    @Test("a once watch that fair release would hold back is kept, so it is refused at the limit")
    func onceHeldBackAtTheLimit() throws {
        let store = try limitedStore(1, alertsPerUnit: 1)
        for index in 0..<3 { try store.subscribe(customer("c\(index)"), to: sku("mac")) }
        try store.changeStock(of: sku("mac"), .set(1))  // c0 alerted, c1 and c2 held back
        try store.subscribe(alice, to: sku("ipad"))
        let before = store.snapshot

        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 1, limit: 1)) {
            try store.subscribe(alice, to: sku("mac"), mode: .once)
        }
        #expect(store.snapshot == before)
        // Below the limit the same request queues behind the held-back watches.
        let queued = try store.subscribe(bob, to: sku("mac"), mode: .once)
        #expect(queued.alert == nil && queued.isKept)
    }

    @Test("a store restored over the limit keeps every watch and refuses new ones until under it")
    func restoredOverTheLimit() throws {
        let original = try limitedStore(5)
        try fill(original, alice, count: 5)
        try fill(original, bob, count: 1)

        let restored = try limitedStore(2, restoring: original.snapshot)
        #expect(restored.watchlist(of: alice) == original.watchlist(of: alice))
        #expect(restored.watchCount(of: alice) == 5)
        #expect(restored.watchCount == 6)
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 5, limit: 2)) {
            try restored.subscribe(alice, to: sku("new"))
        }
        // New terms are still taken over the limit.
        #expect(try restored.subscribe(alice, to: sku("sku4"), mode: .every).isChanged)

        for index in 0..<3 { restored.unsubscribe(alice, from: sku("sku\(index)")) }
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 2, limit: 2)) {
            try restored.subscribe(alice, to: sku("new"))
        }
        restored.unsubscribe(alice, from: sku("sku3"))
        #expect(try restored.subscribe(alice, to: sku("new")).isNew)
        #expect(try restored.subscribe(bob, to: sku("new")).isNew)

        // Restoring into a made store (as the service does while it connects) keeps them all too.
        let later = try limitedStore(1)
        later.restore(original.snapshot)
        #expect(later.watchCount(of: alice) == 5)
        #expect(throws: RestockError.tooManyWatches(customer: alice, watching: 5, limit: 1)) {
            try later.subscribe(alice, to: sku("new"))
        }
    }

    @Test("watchCount(of:) follows subscribes, unsubscribes and alerts")
    func perCustomerCount() throws {
        let store = try limitedStore(1_000)
        for index in 0..<300 { try store.subscribe(alice, to: sku("s\(index)"), mode: index % 2 == 0 ? .once : .every) }
        #expect(store.watchCount(of: alice) == 300)
        for index in 0..<10 { try store.changeStock(of: sku("s\(index)"), .set(1)) }  // 5 once watches end
        #expect(store.watchCount(of: alice) == 295)
        store.unsubscribe(alice, from: sku("s299"))
        store.unsubscribe(alice, from: sku("s299"))
        #expect(store.watchCount(of: alice) == 294)
        #expect(store.watchCount(of: alice) == store.watchlist(of: alice).count)
        #expect(store.watchCount(of: bob) == 0)
    }
}

/// Issue 32, item 3: a bound on the watches of the whole store, across customers.
@Suite("Store-wide watch limit")
struct StoreWideWatchLimitTests {
    func store(holding limit: Int?, restoring snapshot: StoreSnapshot? = nil) throws -> Store {
        try Store(id: storeID(), maximumWatches: limit, restoring: snapshot, clock: { fixedDate })
    }

    @Test("a new watch past the store's limit is refused store-full and changes nothing; existing watches may change terms or go")
    func full() throws {
        let store = try store(holding: 3)
        for name in ["a", "b", "c"] { try store.subscribe(customer(name), to: sku("tv")) }
        try store.changeStock(of: sku("phone"), .set(5))
        let (before, counters) = (store.snapshot, store.counters)
        #expect(throws: RestockError.storeFull(watches: 3, limit: 3)) { try store.subscribe(customer("d"), to: sku("tv")) }
        #expect(throws: RestockError.storeFull(watches: 3, limit: 3)) { try store.subscribe(customer("a"), to: sku("radio")) }
        // Satisfied at once but kept (`every`): refused too, with no alert.
        #expect(throws: RestockError.storeFull(watches: 3, limit: 3)) { try store.subscribe(customer("d"), to: sku("phone"), mode: .every) }
        #expect(store.snapshot == before && store.counters == counters)
        // A `once` watch alerted at once is not kept: taken.
        #expect(try store.subscribe(customer("d"), to: sku("phone")).alert != nil)
        // New terms for a watch already held: taken. An unsubscribe makes room.
        #expect(try store.subscribe(customer("a"), to: sku("tv"), mode: .every, minQuantity: 2).isChanged)
        #expect(store.unsubscribe(customer("b"), from: sku("tv")) != nil)
        #expect(try store.subscribe(customer("d"), to: sku("tv")).isNew)
        #expect(throws: RestockError.storeFull(watches: 3, limit: 3)) { try store.subscribe(customer("e"), to: sku("tv")) }
    }

    @Test("the refusal has its own code and says what happens; no limit and a bad limit")
    func textAndOptions() throws {
        let error = RestockError.storeFull(watches: 10, limit: 10)
        #expect(error.refusalCode == .storeFull && error.code == "store-full")
        #expect(error.description.contains("the store holds 10 watches, the most it may hold (10)"))
        #expect(try Store(id: storeID()).maximumWatches == 10_000_000)
        let unbounded = try store(holding: nil)
        for index in 0..<200 { try unbounded.subscribe(customer("c\(index)"), to: sku("tv")) }
        #expect(unbounded.watchCount == 200)
        #expect(throws: RestockError.invalidMaximumWatches(0)) { try Store(id: storeID(), maximumWatches: 0) }
    }

    @Test("a snapshot past the limit is restored whole; new watches are refused until the store is under it")
    func restoredPastTheLimit() throws {
        let big = try store(holding: nil)
        for index in 0..<5 { try big.subscribe(customer("c\(index)"), to: sku("tv")) }
        let store = try store(holding: 3, restoring: big.snapshot)
        #expect(store.watchCount == 5)
        #expect(throws: RestockError.storeFull(watches: 5, limit: 3)) { try store.subscribe(customer("new"), to: sku("tv")) }
    }

    @Test("a store restored with a watch at the last position takes no new watch, refused store-full and changing nothing, not even one alerted at once; held watches may change terms or go (found by an outside trial: the next subscribe was taken past the last position, acknowledged, and lost at the restart)")
    func noPositionLeft() throws {
        let last = StoreSnapshot.maximumCounter
        let edge = Watch(customer: customer("edge"), sku: sku("tv"), mode: .once, minQuantity: 1, position: last, since: fixedDate)
        let store = try store(holding: nil, restoring: StoreSnapshot(watches: [edge], inventory: [sku("radio"): 3]))
        #expect(store.counters.nextPosition == last + 1)
        let before = store.snapshot
        #expect(throws: RestockError.noPositionLeft) { try store.subscribe(customer("carol"), to: sku("tv")) }
        #expect(throws: RestockError.noPositionLeft) { try store.subscribe(customer("carol"), to: sku("radio")) }
        #expect(store.snapshot == before)
        #expect(try store.subscribe(customer("edge"), to: sku("tv"), mode: .every).watch.position == last)
        #expect(store.unsubscribe(customer("edge"), from: sku("tv")) != nil)
        #expect(throws: RestockError.noPositionLeft) { try store.subscribe(customer("edge"), to: sku("tv")) }
        let error = RestockError.noPositionLeft
        #expect(error.refusalCode == .storeFull && error.description.contains("the last position a watch may take (\(last))"))
    }
}
