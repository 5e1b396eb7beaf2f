import ArgumentParser
import Foundation
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
        @Option(parsing: .unconditional, help: "Alert only when at least this many are on hand (1 to 1000000000) (env RESTOCK_MIN_QUANTITY).") var minQuantity = WholeNumber(1)
        @OptionGroup var waiting: WaitOption
        @Option(help: "End the watch unalerted at this time, RFC 3339 in UTC such as 2027-05-20T12:00:00Z (env RESTOCK_EXPIRES_AT).") var expiresAt: String?
        @Option(parsing: .unconditional, help: "End the watch unalerted after this long, such as 90s, 12h or 30d (env RESTOCK_EXPIRES_IN). Without either, the store's --watch-lifetime.") var expiresIn: String?

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            _ = try identifier(sku, SKU.self, option: "sku")
            _ = try minimum()
            _ = try expiry()
        }

        /// `--min-quantity`, checked against its range.
        private func minimum() throws -> Int { try minQuantity.checked(RequestLimits.minQuantity, option: "min-quantity") }

        /// `--expires-at` or `--expires-in` (from this machine's clock), or `nil` for the store's watch lifetime.
        func expiry() throws -> Date? {
            if expiresAt?.isEmpty == true { throw emptyOption("expires-at") }
            if expiresIn?.isEmpty == true { throw emptyOption("expires-in") }
            do {
                switch (expiresAt, expiresIn) {
                case (nil, nil): return nil
                case (let time?, nil): return try ExpiryText.time(time, option: "--expires-at")
                case (nil, let duration?): return Date().addingTimeInterval(TimeInterval(try ExpiryText.seconds(duration, option: "--expires-in")))
                default: throw ValidationError("give --expires-at or --expires-in, not both")
                }
            } catch let error as ExpiryText.Invalid {
                throw ValidationError(error.description)
            }
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let item = try identifier(sku, SKU.self, option: "sku")
            let mirror = try await connection.client(waitingForNewStore: waiting.wait != nil).subscribe(
                who, to: item, mode: every ? .every : .once, minQuantity: try minimum(), expiresAt: try expiry(), wait: waiting.seconds)
            if let entry = mirror.watching.first(where: { $0.sku == item.rawValue }) {
                let until = entry.expiresAt.map { ", until \($0)" } ?? ""
                print("\(who) is watching \(item) (position \(entry.position), \(entry.mode), at least \(entry.minQuantity)\(until))")
            } else {
                print("\(who): \(item) is in stock already; the alert has been sent")
            }
        }
    }
}
