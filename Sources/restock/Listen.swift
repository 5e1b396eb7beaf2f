import ArgumentParser
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT

extension Restock {
    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a customer's alerts as they arrive, each once (persistent session: nothing is missed while away).")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Customer id (env RESTOCK_CUSTOMER).") var customer: String
        @Option(parsing: .unconditional, help: "Stop after this many alerts (any that arrived with them are printed too, never dropped) (env RESTOCK_COUNT).") var count: WholeNumber?
        @Option(parsing: .unconditional, help: "Stop after this many seconds (at most 86400) (env RESTOCK_TIMEOUT).") var timeout: Seconds?
        @Flag(help: "Print each alert as one JSON object a line (env RESTOCK_JSON).") var json = false

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            _ = try checkedCount()
            _ = try timeout?.checked(waitRange, option: "timeout")
        }

        /// `--count`, at least 1 (`nil`: no limit).
        func checkedCount() throws -> Int? {
            try count?.checked(1...Int.max, option: "count") { "--count must be a whole number, at least 1, not \($0)" }
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            // Stopping (after --count alerts, or at --timeout) still prints every alert taken before it.
            let timeout = try timeout?.checked(waitRange, option: "timeout")
            let count = try checkedCount()
            let alerts = try await connection.client().alerts(for: who, stopAfter: count, within: timeout)
            var received = 0
            for try await alert in alerts {
                if json {
                    emit(String(decoding: alert.jsonData(), as: UTF8.self))
                } else {
                    emit("\(Timestamp.string(from: alert.at))  \(alert.message)  [\(alert.id), position \(alert.position)]")
                }
                received += 1
            }
            if let count, let timeout, received < count {
                // Not a usage error: the command ran as asked, and fewer alerts came.
                StandardStreams.printError("error: \(received) of \(count) alerts arrived within \(timeout.formatted()) s")
                throw ExitCode(1)
            }
        }
    }
}
