import Foundation
import LocalBroker
import RestockCore
import RestockPipeline
import RestockTestSupport
import Testing

/// `restock serve --standby` on a data directory no store could use (issue 33's outside trial: it waited silently for
/// ever, `/livez` ok, and could never take over).
@Suite("A standby's data directory", .timeLimit(.minutes(2)))
struct StandbyDirectoryTests {
    func serveStandby(data: String) async throws -> CommandResult {
        // Refused before anything is opened or connected: no broker is needed (port 1 has none).
        try await ChildProcess.run(restockExecutable, ["serve", "--standby", "--broker", "mqtt://127.0.0.1:1", "--data", data], within: 30)
    }

    @Test("a standby given a file as its data directory, or a directory under a file, is refused in one line as a start is (it waited for ever)")
    func fileAsDirectory() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("standby-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("afile")
        try Data("not a directory".utf8).write(to: file)
        for data in [file.path, file.appendingPathComponent("below").path] {
            let result = try await serveStandby(data: data)
            #expect(result.status == 1, "\(data): \(result.status) \(result.standardError)")
            let errors = result.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }
            #expect(errors.count == 1 && errors.first?.hasSuffix("Not a directory") == true, "\(result.standardError)")
        }
        #expect(try Data(contentsOf: file) == Data("not a directory".utf8), "the file was changed")
    }

    @Test("a standby of another store's data directory is refused in one line at once (it waited, then refused when the live store ended); an empty --data is refused too (it was the working directory)")
    func anotherStoresDirectory() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("standby-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        // A data directory that holds store banana's state (a store opens it once, with no broker needed for that).
        _ = try StoreDatabase(directory: scratch, store: StoreID("banana"))
        let result = try await ChildProcess.run(
            restockExecutable, ["serve", "--standby", "--store", "pear", "--broker", "mqtt://127.0.0.1:1", "--data", scratch.path], within: 30)
        #expect(result.status == 1, "\(result.status) \(result.standardError)")
        let errors = result.standardError.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(errors.count == 1 && errors.first?.contains("banana") == true, "\(result.standardError)")

        let empty = try await serveStandby(data: "")
        #expect(empty.status != 0, "\(empty.standardError)")
        #expect(empty.standardError.contains("--data must name a directory, not be empty"), "\(empty.standardError)")
    }
}
