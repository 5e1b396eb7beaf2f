import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Inventory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the on-hand stock, as the store last published it.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Only this SKU (env RESTOCK_SKU).") var sku: String?

        func validate() throws {
            if let sku { _ = try identifier(sku, SKU.self, option: "sku") }
        }

        func run() async throws {
            let item = try sku.map { try identifier($0, SKU.self, option: "sku") }
            let records = try await connection.client().inventory(item)
            if records.isEmpty { print(item.map { "\($0): no stock recorded" } ?? "no stock recorded") }
            for record in records { print("\(record.sku)\t\(record.quantity)") }
        }
    }
}
