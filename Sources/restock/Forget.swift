import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Admin: forget a customer (their watches, every row about them, their retained mirror); exits 0 once the store has.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String
        @Option(parsing: .unconditional, help: "Seconds to wait for the store's answer (at most 86400) (env RESTOCK_WAIT).") var wait: Double = 10

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            try checkSeconds(wait, option: "wait")
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let report = try await connection.client().forget(who, wait: wait)
            print("\(who) is forgotten (\(report.watches) watches removed); the broker may still hold their own session: docs/operations.md, \"Forgetting a customer\"")
        }
    }
}
