import Foundation
import RestockCore
import RestockTestSupport
import LocalBroker

/// A data directory holding `count` watches of `sku`, written straight through the store's database
/// (``StoreSeeding``; B2, B3), so a benchmark starts from a large registry without sending a request for each watch.
enum SeededStore {
    static func directory(watches count: Int, of sku: String, mode: WatchMode, customerPrefix: String) throws -> URL {
        let directory = try temporaryDirectory()
        let sku = try SKU(sku)
        let since = Date()
        let watches = try (0..<count).map { index in
            Watch(customer: try CustomerID("\(customerPrefix)\(index)"), sku: sku, mode: mode, minQuantity: 1, position: UInt64(index + 1), since: since)
        }
        try StoreSeeding.write(watches, into: directory)
        return directory
    }
}
