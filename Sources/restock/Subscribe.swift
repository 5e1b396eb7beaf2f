import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Subscribe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask to be alerted when a SKU is back; exits 0 once the store confirms.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String
        @Option(help: "SKU to watch (env RESTOCK_SKU).") var sku: String
        @Flag(help: "Alert on every return, not just once (env RESTOCK_EVERY).") var every = false
        @Option(parsing: .unconditional, help: "Alert only when at least this many are on hand (1 to 1000000000) (env RESTOCK_MIN_QUANTITY).") var minQuantity: Int = 1
        @Option(parsing: .unconditional, help: "Seconds to wait for the store's confirmation (at most 86400) (env RESTOCK_WAIT).") var wait: Double = 10

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            _ = try identifier(sku, SKU.self, option: "sku")
            try checkRange(minQuantity, RequestLimits.minQuantity, option: "min-quantity")
            try checkSeconds(wait, option: "wait")
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let item = try identifier(sku, SKU.self, option: "sku")
            let mirror = try await connection.client().subscribe(
                who, to: item, mode: every ? .every : .once, minQuantity: minQuantity, wait: wait)
            if let entry = mirror.watching.first(where: { $0.sku == item.rawValue }) {
                print("\(who) is watching \(item) (position \(entry.position), \(entry.mode), at least \(entry.minQuantity))")
            } else {
                print("\(who): \(item) is in stock already; the alert has been sent")
            }
        }
    }
}
