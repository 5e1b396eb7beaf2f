import Foundation
import RestockCore
import RestockTestSupport
import LocalBroker

/// A data directory holding `count` watches of `sku`, written straight through the store's database
/// (``StoreSeeding``; B2, B3; ``BenchState`` for PostgreSQL), so a benchmark starts from a large registry without sending a request for each watch.
enum SeededStore {
    static func directory(watches count: Int, of sku: String, mode: WatchMode, customerPrefix: String) throws -> URL {
        let directory = try temporaryDirectory()
        try StoreSeeding.write(try watches(count, of: sku, mode: mode, customerPrefix: customerPrefix), into: directory)
        return directory
    }

    /// `count` watches of `sku`, of customers `customerPrefix` 0, 1, …, at positions 1, 2, ….
    static func watches(_ count: Int, of sku: String, mode: WatchMode, customerPrefix: String) throws -> [Watch] {
        let sku = try SKU(sku)
        let since = Date()
        return try (0..<count).map { index in
            Watch(customer: try CustomerID("\(customerPrefix)\(index)"), sku: sku, mode: mode, minQuantity: 1, position: UInt64(index + 1), since: since)
        }
    }
}
