import ArgumentParser
import Foundation
import RestockMQTT

extension Restock {
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a store's data directory, running or stopped, into a new one that `restock serve --data` starts on.")

        @Option(help: "The store's data directory (env RESTOCK_DATA).")
        var data: String

        @Option(help: "Where the copy goes: a directory that does not exist yet, or an empty one (env RESTOCK_TO).")
        var to: String

        func run() async throws {
            let watches = try await StoreBackup.copy(from: URL(fileURLWithPath: data), to: URL(fileURLWithPath: to))
            print("backed up \(data) to \(to): \(watches) watches")
        }
    }
}
