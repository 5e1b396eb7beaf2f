import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Unsubscribe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop watching a SKU, or everything; exits 0 once the store confirms.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String
        @Option(help: "SKU to stop watching (env RESTOCK_SKU).") var sku: String?
        @Flag(help: "Stop watching everything (env RESTOCK_ALL).") var all = false
        @OptionGroup var waiting: WaitOption

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            guard sku != nil || all else { throw ValidationError("give --sku SKU or --all") }
            guard sku == nil || !all else { throw ValidationError("give --sku SKU or --all, not both") }
            if let sku { _ = try identifier(sku, SKU.self, option: "sku") }
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let item = try sku.map { try identifier($0, SKU.self, option: "sku") }
            let mirror = try await connection.client(waitingForNewStore: waiting.wait != nil).unsubscribe(who, from: item, wait: waiting.seconds)
            let rest = mirror.watching.map(\.sku)
            print("\(who) stopped watching \(item?.rawValue ?? "everything")\(rest.isEmpty ? "" : "; still watching \(rest.joined(separator: ", "))")")
        }
    }
}
