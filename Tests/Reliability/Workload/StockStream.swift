import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import Deadlines

/// An admin restocking one SKU again and again: each rise is `set 0` then `set quantity`, each confirmed
/// by the store's inventory answer before the next, and retried while the broker or the link is down.
/// `set` is idempotent, so a retried request never makes a rise of its own: the number of rises, and so
/// the number of alerts an `every` watch gets, is exactly known.
struct StockStream: Sendable {
    let client: StoreClient
    let sku: SKU
    let quantity: Int

    init(url: String, sku: String, quantity: Int = 3, username: String? = nil, password: String? = nil) throws {
        client = StoreClient(
            connection: BrokerSettings(broker: try BrokerAddress(url: url), username: username, password: password),
            topics: try RestockTopics(store: StoreID("apple")))
        self.sku = try SKU(sku)
        self.quantity = quantity
    }

    /// Makes `rises` rises; `afterEach` is told how many are done.
    func run(rises: Int, afterEach: @Sendable (Int) async throws -> Void = { _ in }) async throws {
        for rise in 1...rises {
            try await set(0)
            try await set(quantity)
            try await afterEach(rise)
        }
    }

    /// Sets the stock, retrying for up to a minute until the store confirms.
    func set(_ quantity: Int) async throws {
        try await withDeadline(60, waitingFor: "the store to confirm set \(quantity) of \(sku)") {
            while true {
                do {
                    try await client.changeStock(of: sku, .set(quantity), wait: 5)
                    return
                } catch {
                    try Task.checkCancellation()
                    try await ContinuousClock().sleep(for: .milliseconds(100))  // the broker is down: try again
                }
            }
        }
    }
}
