import ArgumentParser
import RestockCore
import RestockMQTT

extension Restock {
    struct Stock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Admin: set or adjust the on-hand stock of a SKU; exits 0 once the store confirms.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "SKU (env RESTOCK_SKU).") var sku: String
        @Option(parsing: .unconditional, help: "Make the on-hand quantity exactly N (0 to 1000000000) (env RESTOCK_SET).") var set: WholeNumber?
        @Option(parsing: .unconditional, help: "Add N (negative, such as --add -2, to remove; never below 0; -1000000000 to 1000000000) (env RESTOCK_ADD).") var add: WholeNumber?
        @OptionGroup var waiting: WaitOption

        func validate() throws {
            _ = try identifier(sku, SKU.self, option: "sku")
            guard (set == nil) != (add == nil) else { throw ValidationError("give exactly one of --set N and --add N") }
            _ = try change()
        }

        /// The change `--set` or `--add` asks for, checked against its range.
        private func change() throws -> StockChange {
            if let set { return .set(try set.checked(RequestLimits.stockSet, option: "set")) }
            return .add(try (add ?? WholeNumber(0)).checked(RequestLimits.stockAdd, option: "add"))
        }

        func run() async throws {
            let item = try identifier(sku, SKU.self, option: "sku")
            let record = try await connection.client(waitingForNewStore: waiting.wait != nil).changeStock(of: item, try change(), wait: waiting.seconds)
            print("\(record.sku): \(record.quantity) on hand")
        }
    }
}
