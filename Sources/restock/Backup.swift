import ArgumentParser
import Foundation
import RestockMQTT
import RestockPipeline

extension Restock {
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a store's data directory, running or stopped, into a new one that `restock serve --data` starts on.")

        @Option(help: "The store's data directory (env RESTOCK_DATA).")
        var data: String?

        @OptionGroup var file: ConfigFileOption

        @Option(help: "Refused, with what to do instead: a store on PostgreSQL is backed up with the database's own tools (env RESTOCK_DATABASE).")
        var database: String?

        @Option(help: "Where the copy goes: a directory that does not exist yet, or an empty one (env RESTOCK_TO).")
        var to: String

        func validate() throws {
            if database == "" { throw ValidationError(Serve.emptyDatabase) }
            if data == nil, database == nil { throw ValidationError("give --data DIR: the data directory of the store to copy") }
            if data == "" { throw ValidationError("--data is empty: give the store's data directory") }
            if to == "" { throw ValidationError("--to is empty: give a new or empty directory for the copy") }
        }

        func run() async throws {
            // Before --data: RESTOCK_DATA may be set beside RESTOCK_DATABASE, as serve refuses it.
            if database != nil {
                throw ValidationError(
                    "a store on PostgreSQL (--database) is backed up with the database's own tools: pg_dump --table='restock_*' DATABASE, or base backups and point-in-time recovery (docs/operations.md, \"Running on PostgreSQL\")")
            }
            guard let data else { return }
            let watches = try await StoreBackup.copy(from: URL(fileURLWithPath: data), to: URL(fileURLWithPath: to))
            print("backed up \(StoredValues.inLine(data)) to \(StoredValues.inLine(to)): \(watches) watches")
        }
    }
}
