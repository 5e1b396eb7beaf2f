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
        @Option(parsing: .unconditional, help: "Stop after this many alerts (any that arrived with them are printed too, never dropped) (env RESTOCK_COUNT).") var count: Int?
        @Option(parsing: .unconditional, help: "Stop after this many seconds (at most 86400) (env RESTOCK_TIMEOUT).") var timeout: Seconds?
        @Flag(help: "Print each alert as one JSON object a line (env RESTOCK_JSON).") var json = false

        func validate() throws {
            _ = try identifier(customer, CustomerID.self, option: "customer")
            if let count, count < 1 { throw ValidationError("--count must be at least 1") }
            _ = try timeout?.checked(waitRange, option: "timeout")
        }

        func run() async throws {
            let who = try identifier(customer, CustomerID.self, option: "customer")
            // Stopping (after --count alerts, or at --timeout) still prints every alert taken before it.
            let timeout = try timeout?.checked(waitRange, option: "timeout")
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
