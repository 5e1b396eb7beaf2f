import ArgumentParser
import Foundation
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockPostgres

extension Restock {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a store's watches as JSON Lines, from its data directory or its database; safe while the store runs (it only reads).")

        @Option(help: "The store's data directory (env RESTOCK_DATA).")
        var data: String?

        @OptionGroup var file: ConfigFileOption

        @Option(help: "The store's PostgreSQL database instead of --data, as for serve; the password in RESTOCK_DATABASE_PASSWORD (env RESTOCK_DATABASE).")
        var database: String?

        @Option(help: "With --database: the store whose watches to write; default apple (env RESTOCK_STORE).")
        var store: String?

        @Option(help: "Write to this file instead of standard output: whole or not at all, never inside the data directory (env RESTOCK_TO).")
        var to: String?

        func validate() throws {
            if database == "" { throw ValidationError(Serve.emptyDatabase) }
            switch (data, database) {
            case (nil, nil): throw ValidationError("give --data DIR (SQLite) or --database URL (PostgreSQL): where the store keeps its state")
            case (.some, .some): throw ValidationError("--data and --database both say where the store keeps its state: give one")
            case (.some(""), nil): throw ValidationError("--data is empty: give the store's data directory")
            case _ where to == "": throw ValidationError("--to is empty: give the file to write")
            case (.some, nil): break  // a data directory holds one store: --store (RESTOCK_STORE) says nothing more
            case (nil, .some): _ = try source()
            }
        }

        /// Where the watches are read: the data directory, or the database and the store in it.
        private func source() throws -> (database: PostgresStorage, store: StoreID)? {
            guard let database else { return nil }
            let url: DatabaseURL
            do {
                url = try DatabaseURL(parsing: database)
            } catch {
                throw ValidationError(error.description)
            }
            let store: StoreID
            do {
                store = try StoreID(self.store ?? "apple")
            } catch {
                throw ValidationError("--store: \(error)")
            }
            let settings = PostgresSettings(url, password: ProcessInfo.processInfo.environment["RESTOCK_DATABASE_PASSWORD"])
            return (PostgresStorage(settings: settings), store)
        }

        func run() async throws {
            let target = try to.map { path throws(ExportFailure) in try ExportTarget.file(path, dataDirectory: data) } ?? .standardOutput
            let count: WatchExportCount
            let from: String
            do {
                if let (database, store) = try source() {
                    count = try await WatchExportLine.buffered(to: target.handle) { write in try await database.exportWatches(of: store, write) }
                    from = "store \(store) of \(database.location)"
                } else {
                    var leftOut: [String] = []
                    let written = try await StoreExport.watches(from: URL(fileURLWithPath: data ?? ""), to: target.handle) { leftOut.append($0) }
                    count = WatchExportCount(written: written, leftOut: leftOut)
                    from = StoredValues.inLine(data ?? "")
                }
                try target.commit()
            } catch let error as NSError where error.domain == NSCocoaErrorDomain || error.domain == NSPOSIXErrorDomain {
                target.abandon()
                throw ExportFailure("cannot write \(target.name): \(ExportFailure.reason(error))")
            } catch {
                target.abandon()
                throw error
            }
            // As the store's start says it (the first rows named, then how many), on stderr: the lines on stdout are
            // the watches only.
            for row in count.leftOut.prefix(Self.rowsNamed) {
                StandardStreams.printError("warning: left out a row that holds no valid record, as the store does at start: \(row)")
            }
            if count.leftOut.count > Self.rowsNamed {
                StandardStreams.printError("warning: left out \(count.leftOut.count) rows that hold no valid record in all")
            }
            if to != nil { StandardStreams.printError("exported \(count.written) \(count.written == 1 ? "watch" : "watches") of \(from) to \(target.name)") }
        }

        /// How many left-out rows are named, one line each, before their count.
        static let rowsNamed = 20
    }
}
