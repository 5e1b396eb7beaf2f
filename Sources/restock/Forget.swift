import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Admin: forget a customer (their watches, every row about them, their retained mirror); exits 0 once the store has.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String
        @OptionGroup var waiting: WaitOption

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let report = try await connection.client(waitingForNewStore: waiting.wait != nil).forget(who, wait: waiting.seconds)
            print("\(who) is forgotten (\(report.watches) watches removed); the broker may still hold their own session: docs/operations.md, \"Forgetting a customer\"")
        }
    }
}
