import Foundation
import RestockCore
import RestockMQTT
import Testing

@Suite("Store database")
struct StoreDatabaseTests {
    @Test("a watch saved again replaces every column: dropped and made anew, it has its new position")
    func savedAgainReplacesEveryColumn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        let alice = try CustomerID("alice"), sku = try SKU("ipad")
        let key = WatchKey(customer: alice, sku: sku)
        var first = StoreChanges()
        first.watches[key] = Watch(customer: alice, sku: sku, mode: .once, minQuantity: 1, position: 3, since: Date(timeIntervalSinceReferenceDate: 1))
        try database.commit(first)
        var again = StoreChanges()
        let renewed = Watch(
            customer: alice, sku: sku, mode: .every, minQuantity: 2, position: 9, since: Date(timeIntervalSinceReferenceDate: 2),
            isWaiting: false)
        again.watches[key] = renewed
        try database.commit(again)
        #expect(try database.loadSnapshot().watches == [renewed])
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
        for watch in watches { changes.watches[WatchKey(customer: watch.customer, sku: sku)] = watch }
        try database.commit(changes)
        var removal = StoreChanges()
        for watch in watches where watch.position % 3 == 0 { removal.watches[WatchKey(customer: watch.customer, sku: sku)] = .some(nil) }
        try database.commit(removal)
        #expect(try database.loadSnapshot().watches == watches.filter { $0.position % 3 != 0 })
    }
}
