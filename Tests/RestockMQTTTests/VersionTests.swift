import Foundation
import GRDB
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing
import Deadlines

/// `restock --version` and the data directory's schema version (docs/operations.md, "Upgrading").
@Suite("Versions", .timeLimit(.minutes(3)))
struct VersionTests {
    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }

    /// A data directory with `watches` watches of store apple, written as the store writes it.
    func seeded(watches: Int = 3) throws -> URL {
        let data = try temporaryDirectory()
        let watches = try (1...watches).map { n in
            try Watch(customer: CustomerID("c\(n)"), sku: SKU("ipad"), mode: .once, minQuantity: 1, position: UInt64(n), since: Date())
        }
        try StoreSeeding.write(watches, into: data)
        return data
    }

    @Test("restock --version prints the version and exits 0")
    func version() async throws {
        let result = try await restock(["--version"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "\(RestockVersion.current)\n")
    }

    @Test(
        "serve refuses a data directory written by a newer version, in one line naming the file, and leaves it as it was",
        arguments: [
            "INSERT INTO grdb_migrations (identifier) VALUES ('v5: from a newer release')", "PRAGMA user_version = 9",
        ])
    func newerRefused(_ sql: String) async throws {
        let data = try seeded()
        defer { try? FileManager.default.removeItem(at: data) }
        let state = data.appendingPathComponent("store.sqlite")
        try DatabaseQueue(path: state.path).inDatabase { db in try db.execute(sql: sql) }
        let before = try Self.schema(of: state)
        let port = try RefusingLoopbackPort()
        let result = try await restock(["serve", "--broker", "mqtt://127.0.0.1:\(port.port)", "--data", data.path])
        #expect(result.status != 0)
        // The log's first line says where the state is; then the one line of the error.
        let errors = result.standardError.split(separator: "\n").filter { $0.hasPrefix("error: ") }
        #expect(errors.count == 1, "\(result.standardError)")
        #expect(errors.first?.hasPrefix("error: \(state.path) was written by a newer RestockAlerter (schema version") == true, "\(result.standardError)")
        #expect(try Self.schema(of: state) == before)
    }

    /// The tables, the migrations recorded and the user version of the SQLite file at `url`.
    static func schema(of url: URL) throws -> [String] {
        try DatabaseQueue(path: url.path).inDatabase { db in
            try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
                + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                + [String(try Int.fetchOne(db, sql: "PRAGMA user_version") ?? -1)]
        }
    }

    @Test("a migration that runs at start is logged once, from which schema version to which")
    func migrationLogged() async throws {
        let broker = try await MosquittoBroker.start()
        let data = try seeded()
        defer { try? FileManager.default.removeItem(at: data) }
        // As version 3 of the schema left it: no mirror table, no expiry, no alert figures, no lease, three migrations recorded.
        try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path).inDatabase { db in
            try db.execute(sql: "DROP TABLE mirror; DELETE FROM grdb_migrations WHERE identifier LIKE 'v4%'")
            try db.execute(
                sql: """
                    DROP INDEX watch_expiresAt; ALTER TABLE watch DROP COLUMN expiresAt; DROP TABLE alertFigure;
                    ALTER TABLE outbox DROP COLUMN sku; ALTER TABLE deadLetter DROP COLUMN reason;
                    DELETE FROM grdb_migrations WHERE identifier LIKE 'v-admin%';
                    DROP TABLE lease; DELETE FROM grdb_migrations WHERE identifier LIKE 'v-lease%'
                    """)
        }
        try DatabaseQueue(path: data.appendingPathComponent("store.sqlite").path).inDatabase { db in
            try db.execute(sql: "PRAGMA user_version = 0")
        }
        let store = try StoreProcess(broker: broker, dataDirectory: data)
        try await store.start()
        let state = data.appendingPathComponent("store.sqlite").path
        #expect(store.log.components(separatedBy: "migrated \(state) from schema version 3 to 7").count == 2, "\(store.log)")
        try await store.send(SIGTERM)
        try await store.start()
        #expect(store.log.components(separatedBy: "migrated").count == 1, "nothing to migrate the second time: \(store.log)")
        try await store.send(SIGTERM)
    }

    @Test("journal.sqlite's migration is logged as store.sqlite's is: one written before versions were recorded (issue 32: it migrated silently)")
    func journalMigrationLogged() async throws {
        let broker = try await MosquittoBroker.start()
        let data = try seeded()
        defer { try? FileManager.default.removeItem(at: data) }
        let journal = data.appendingPathComponent("journal.sqlite").path
        _ = try RequestLog(directory: data)
        // As releases before the schema versions (298b79b) left it: both migrations run, no user_version.
        try DatabaseQueue(path: journal).inDatabase { db in try db.execute(sql: "PRAGMA user_version = 0") }
        let store = try StoreProcess(broker: broker, dataDirectory: data)
        try await store.start()
        let line = try #require(store.log.split(separator: "\n").first { $0.contains("migrated \(journal) from schema version") }, "\(store.log)")
        #expect(line.contains(" info ") && line.contains("migrated \(journal) from schema version 2 to 2"), "\(line)")
        let recorded = try DatabaseQueue(path: journal).inDatabase { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(recorded == 2)
        try await store.send(SIGTERM)
        try await store.start()
        #expect(store.log.components(separatedBy: "migrated").count == 1, "nothing to migrate the second time: \(store.log)")
        try await store.send(SIGTERM)
    }
}
