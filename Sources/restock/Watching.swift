import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Watching: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show what a customer is watching, as the store last published it.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            let watching = try await connection.client().watching(who)?.watching ?? []
            if watching.isEmpty { print("\(who) is not watching anything") }
            for entry in watching {
                let until = entry.expiresAt.map { "\tuntil \($0)" } ?? ""
                print("\(entry.sku)\tposition \(entry.position)\t\(entry.mode)\tat least \(entry.minQuantity)\tsince \(entry.since)\(until)")
            }
        }
    }
}
