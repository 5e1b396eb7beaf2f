import Foundation
import RestockCore
import RestockPipeline
import Testing

@Suite("Store database")
struct StoreDatabaseTests {
    @Test("a watch saved again replaces every column: dropped and made anew, it has its new position")
    func savedAgainReplacesEveryColumn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        let alice = try CustomerID("alice"), sku = try SKU("ipad")
        var first = StoreChanges()
        first.save(Watch(customer: alice, sku: sku, mode: .once, minQuantity: 1, position: 3, since: Date(timeIntervalSinceReferenceDate: 1)))
        try database.commit(first)
        var again = StoreChanges()
        let renewed = Watch(
            customer: alice, sku: sku, mode: .every, minQuantity: 2, position: 9, since: Date(timeIntervalSinceReferenceDate: 2),
            isWaiting: false)
        again.save(renewed)
        try database.commit(again)
        #expect(try database.loadSnapshot().watches == [renewed])
    }

    @Test("a database belongs to the store that first opened it; another store id is refused")
    func ownedByOneStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do { _ = try StoreDatabase(directory: directory, store: StoreID("apple")) }
        #expect(throws: RestockMQTTError.dataDirectoryOfAnotherStore(directory.path, owner: "apple")) {
            try StoreDatabase(directory: directory, store: StoreID("pear"))
        }
        _ = try StoreDatabase(directory: directory, store: StoreID("apple"))
    }

    @Test("many rows in one commit, saved and deleted, all land")
    func manyRows() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        let sku = try SKU("ipad")
        let watches = try (0..<1_000).map {
            Watch(customer: try CustomerID("c\($0)"), sku: sku, mode: .once, minQuantity: 1, position: UInt64($0 + 1), since: Date(timeIntervalSinceReferenceDate: 0))
        }
        var changes = StoreChanges()
        for watch in watches { changes.save(watch) }
        try database.commit(changes)
        var removal = StoreChanges()
        for watch in watches where watch.position % 3 == 0 { removal.remove(WatchKey(customer: watch.customer, sku: sku)) }
        try database.commit(removal)
        #expect(try database.loadSnapshot().watches == watches.filter { $0.position % 3 != 0 })
    }

    @Test("changes apply in the order they were made: a line's flags by position between saves of the same watches")
    func orderedChanges() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        let sku = try SKU("ipad")
        let since = Date(timeIntervalSinceReferenceDate: 0)
        let a = Watch(customer: try CustomerID("a"), sku: sku, mode: .every, minQuantity: 1, position: 1, since: since)
        let b = Watch(customer: try CustomerID("b"), sku: sku, mode: .once, minQuantity: 1, position: 2, since: since)
        let alerted = Watch(customer: a.customer, sku: sku, mode: .every, minQuantity: 1, position: 1, since: since, isWaiting: false)
        var changes = StoreChanges()
        changes.save(a)  // made in this batch, then alerted, then its terms changed again
        changes.save(b)
        changes.lineChanged(updated: [alerted], removed: [b])
        let renewed = Watch(customer: a.customer, sku: sku, mode: .every, minQuantity: 5, position: 1, since: since, isWaiting: true)
        changes.save(renewed)
        try database.commit(changes)
        #expect(try database.loadSnapshot().watches == [renewed])

        var again = StoreChanges()
        again.lineChanged(updated: [Watch(customer: a.customer, sku: sku, mode: .every, minQuantity: 5, position: 1, since: since, isWaiting: false)], removed: [])
        try database.commit(again)
        #expect(try database.loadSnapshot().watches.map(\.isWaiting) == [false])
    }

    @Test("the state reads from beside a running store, without its lock: the snapshot and the queue lengths")
    func readsBesideARunningStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        #expect(StoreDatabase.isInUse(directory))
        let watch = Watch(customer: try CustomerID("alice"), sku: try SKU("ipad"), mode: .once, minQuantity: 1, position: 1, since: Date(timeIntervalSinceReferenceDate: 0))
        var changes = StoreChanges()
        changes.save(watch)
        changes.publications = [Publication(key: "k", topic: "t", payload: [1], retain: true)]
        try database.commit(changes)
        try database.journal(topic: "t", payload: [2])
        #expect(try StoreDatabase.snapshot(readingOnly: directory).watches == [watch])
        let queues = try StoreDatabase.queueLengths(readingOnly: directory)
        #expect([queues.inbox, queues.outbox, queues.watches] as [Int] == [1, 1, 1])
        let own = try database.queueLengths()
        #expect([own.inbox, own.outbox, own.watches] as [Int] == [1, 1, 1])
    }
}
