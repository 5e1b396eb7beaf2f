import ArgumentParser
import Foundation
import RestockCore
import RestockMQTT

extension Restock {
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Admin: the store's figures — customers, watches, and per SKU those waiting and the alerts raised and acknowledged, over its life and the last 24 h.")

        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Only this SKU (env RESTOCK_SKU).") var sku: String?
        @Flag(help: "Print the store's reply as JSON (env RESTOCK_JSON).") var json = false
        @OptionGroup var waiting: WaitOption

        func validate() throws {
            if let sku { _ = try identifier(sku, SKU.self, option: "sku") }
        }

        func run() async throws {
            let item = try sku.map { try identifier($0, SKU.self, option: "sku") }
            let report = try await connection.client(waitingForNewStore: waiting.wait != nil).report(sku: item, wait: waiting.seconds)
            if json {
                print(String(decoding: try JSONEncoder.sorted.encode(report), as: UTF8.self))
                return
            }
            print("store \(report.store) at \(report.at): \(report.customers) customers, \(report.watches) watches")
            print("alerts raised \(report.alertsRaised.life) (last 24 h \(report.alertsRaised.last24h)), acknowledged \(report.alertsAcknowledged.life) (last 24 h \(report.alertsAcknowledged.last24h))")
            print(["sku", "watching", "waiting", "raised", "raised-24h", "acknowledged", "acknowledged-24h"].joined(separator: "\t"))
            for figures in report.skus {
                let columns = [
                    figures.sku, "\(figures.watching)", "\(figures.waiting)", "\(figures.alertsRaised.life)", "\(figures.alertsRaised.last24h)",
                    "\(figures.alertsAcknowledged.life)", "\(figures.alertsAcknowledged.last24h)",
                ]
                print(columns.joined(separator: "\t"))
            }
        }
    }

    struct DeadLetters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dead-letters",
            abstract: "Admin: list the requests the store set aside (id, topic, payload, why, when), or replay or drop one.")

        @OptionGroup var connection: ConnectionOptions
        @Option(parsing: .unconditional, help: "Apply the dead letter with this id again, as it came (env RESTOCK_REPLAY).") var replay: WholeNumber?
        @Option(parsing: .unconditional, help: "Remove the dead letter with this id, unapplied (env RESTOCK_DROP).") var drop: WholeNumber?
        @Flag(help: "Print the store's list as JSON (env RESTOCK_JSON).") var json = false
        @OptionGroup var waiting: WaitOption

        func validate() throws {
            guard replay == nil || drop == nil else { throw ValidationError("give --replay ID or --drop ID, not both") }
            _ = try ids()
        }

        /// `--replay` and `--drop`, each a dead letter's id (digits only, as every number of the command line: `+5` was
        /// sent as 5, and `0x10` got the parser's line: an outside trial).
        private func ids() throws -> (replay: Int64?, drop: Int64?) {
            func id(_ value: WholeNumber?, _ option: String) throws -> Int64? {
                try value.map { Int64(try $0.checked(1...Int.max, option: option) { "--\(option) must be a dead letter's id, a whole number from 1, not \($0)" }) }
            }
            return (try id(replay, "replay"), try id(drop, "drop"))
        }

        func run() async throws {
            let client = try connection.client(waitingForNewStore: waiting.wait != nil)
            let (replay, drop) = try ids()
            if let action: DeadLetterAction = replay.map({ .replay($0) }) ?? drop.map({ .drop($0) }) {
                let outcome = try await client.deadLetter(action, wait: waiting.seconds)
                guard outcome.outcome != "unknown" else { throw RestockMQTTError.refused(code: "unknown", detail: "no dead letter \(action.id)") }
                print("dead letter \(outcome.deadLetter) \(outcome.outcome)")
                return
            }
            let list = try await client.deadLetters(wait: waiting.seconds)
            if json {
                print(String(decoding: try JSONEncoder.sorted.encode(list), as: UTF8.self))
                return
            }
            if list.deadLetters.isEmpty { print("no dead letters") }
            for entry in list.deadLetters {
                let payload = entry.payload.map { String(reflecting: String($0.prefix(200))) } ?? "base64:\(entry.payloadBase64.prefix(200))"
                print("\(entry.id)\t\(entry.failedAt)\t\(entry.topic)\t\(payload)\t\(entry.reason)")
            }
        }
    }
}

extension JSONEncoder {
    /// Compact JSON with sorted keys, as the store writes its payloads.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
