import ArgumentParser
import Foundation
import RestockMQTT

extension Restock {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a store's watches as JSON Lines, from its data directory; safe while the store runs (it only reads).")

        @Option(help: "The store's data directory (env RESTOCK_DATA).")
        var data: String

        @Option(help: "Write to this file (made anew) instead of standard output (env RESTOCK_TO).")
        var to: String?

        func run() async throws {
            let source = URL(fileURLWithPath: data)
            guard let to else {
                _ = try await StoreExport.watches(from: source, to: FileHandle.standardOutput)
                return
            }
            guard FileManager.default.createFile(atPath: to, contents: nil), let output = FileHandle(forWritingAtPath: to) else {
                throw ValidationError("cannot write \(to): \(String(cString: strerror(errno)))")
            }
            defer { try? output.close() }
            let count = try await StoreExport.watches(from: source, to: output)
            StandardStreams.printError("exported \(count) watches of \(data) to \(to)")
        }
    }
}
