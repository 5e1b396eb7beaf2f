import Foundation
import RestockCore
import RestockMQTT
import RestockTestSupport

/// A data directory holding `count` watches of `sku`, written straight through ``StoreDatabase`` (B2, B3),
/// so a benchmark starts from a large registry without sending a request for each watch.
enum SeededStore {
    static func directory(watches count: Int, of sku: String, mode: WatchMode, customerPrefix: String) throws -> URL {
        let directory = try temporaryDirectory()
        let database = try StoreDatabase(directory: directory)
        let sku = try SKU(sku)
        let since = Date()
        var changes = StoreChanges()
        for index in 0..<count {
            let customer = try CustomerID("\(customerPrefix)\(index)")
            changes.save(Watch(customer: customer, sku: sku, mode: mode, minQuantity: 1, position: UInt64(index + 1), since: since))
        }
        changes.counters = (UInt64(count + 1), 1)
        try database.commit(changes)
        return directory
    }
}
