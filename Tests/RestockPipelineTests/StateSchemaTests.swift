import Foundation
import GRDB
import Testing

@testable import RestockPipeline

/// The store's state's migrations (``StateSchema``), in memory: a file of every earlier version ends with the schema
/// a new file has, keeping its rows.
@Suite("State schema")
struct StateSchemaTests {
    /// What each released version ran on `store.sqlite`, as it ran it: pinned here, so that a migration changed
    /// in place (instead of a new one added at the end) makes new files differ from migrated ones.
    static let released: [(identifier: String, sql: String)] = [
        (
            "v1",
            """
            CREATE TABLE counter (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
            CREATE TABLE watch (
                customer TEXT NOT NULL, sku TEXT NOT NULL, mode TEXT NOT NULL,
                minQuantity INTEGER NOT NULL, position INTEGER NOT NULL UNIQUE,
                since REAL NOT NULL, waiting INTEGER NOT NULL,
                PRIMARY KEY (customer, sku));
            CREATE TABLE inventory (sku TEXT PRIMARY KEY NOT NULL, quantity INTEGER NOT NULL);
            CREATE TABLE inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, payload BLOB NOT NULL);
            CREATE TABLE outbox (
                seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
                payload BLOB NOT NULL, retain INTEGER NOT NULL);
            """
        ),
        (
            "v2: alert batches in the outbox",
            """
            ALTER TABLE outbox ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE outbox ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
            """
        ),
        (
            "v3: owner, request sizes, retain flags, attempts, dead letters",
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
            ALTER TABLE inbox ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE inbox ADD COLUMN retained INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE deadLetter (
                seq INTEGER PRIMARY KEY NOT NULL, topic TEXT NOT NULL, payload BLOB NOT NULL,
                size INTEGER NOT NULL, retained INTEGER NOT NULL, failedAt REAL NOT NULL);
            """
        ),
        (
            "v4: customers with a mirror",
            """
            CREATE TABLE mirror (customer TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
            INSERT OR IGNORE INTO mirror (customer) SELECT DISTINCT customer FROM watch;
            """
        ),
        (
            "v-admin-1: watch expiry",
            """
            ALTER TABLE watch ADD COLUMN expiresAt REAL;
            CREATE INDEX watch_expiresAt ON watch (expiresAt) WHERE expiresAt IS NOT NULL;
            """
        ),
        (
            "v-admin-2: alert figures, dead-letter reasons",
            """
            CREATE TABLE alertFigure (
                sku TEXT NOT NULL, hour INTEGER NOT NULL, raised INTEGER NOT NULL, acknowledged INTEGER NOT NULL,
                PRIMARY KEY (sku, hour)) WITHOUT ROWID;
            ALTER TABLE outbox ADD COLUMN sku TEXT;
            ALTER TABLE deadLetter ADD COLUMN reason TEXT NOT NULL DEFAULT 'the store failed while applying this request';
            """
        ),
        (
            "v-lease-1: the data directory's lease",
            """
            CREATE TABLE lease (
                id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL, owner TEXT NOT NULL,
                renewals INTEGER NOT NULL, renewedAt REAL NOT NULL, locked INTEGER NOT NULL);
            INSERT INTO lease (id, epoch, owner, renewals, renewedAt, locked) VALUES (1, 0, '', 0, 0, 0);
            """
        ),
    ]

    /// A state in memory as the first `versions` released versions left it, with GRDB's record of their migrations.
    static func written(byVersions versions: Int) throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            for step in released.prefix(versions) {
                try db.execute(sql: step.sql)
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [step.identifier])
            }
        }
        return queue
    }

    /// Every table's columns, indexes and kind, and the migrations recorded: what two files of one schema share.
    static func schema(of reader: any DatabaseReader) throws -> [String] {
        try reader.read { db in
            var lines: [String] = []
            let tables = try Row.fetchAll(
                db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for table in tables {
                let name: String = table["name"]
                let sql: String = table["sql"]
                lines.append("table \(name)\(sql.contains("WITHOUT ROWID") ? " without rowid" : "")")
                for column in try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_xinfo(?)", arguments: [name]) {
                    lines.append("  column \(column.databaseValues.map(\.description).joined(separator: " "))")
                }
                for index in try Row.fetchAll(db, sql: "SELECT name, \"unique\", origin FROM pragma_index_list(?) ORDER BY name", arguments: [name]) {
                    let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [index["name"] as String])
                    lines.append("  index \(index.databaseValues.map(\.description).joined(separator: " ")) on \(columns)")
                }
            }
            lines += try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier").map { "migrated \($0)" }
            return lines
        }
    }

    @Test("a new state runs every migration, and says it was new")
    func newState() throws {
        let queue = try DatabaseQueue()
        #expect(try StateSchema.prepare(queue).isNew)
        #expect(try Self.schema(of: queue).filter { $0.hasPrefix("migrated") }.count == Self.released.count)
        #expect(try !StateSchema.prepare(queue).isNew, "a state with tables is not new")
    }

    @Test("a state of each earlier version migrates to the schema of a new one", arguments: 1...4)
    func earlierVersionsMigrate(_ versions: Int) throws {
        let fresh = try DatabaseQueue()
        try StateSchema.prepare(fresh)
        let older = try Self.written(byVersions: versions)
        #expect(try !StateSchema.prepare(older).isNew)
        let expected = try Self.schema(of: fresh)
        #expect(expected.contains("table mirror without rowid"), "\(expected)")
        #expect(try Self.schema(of: older) == expected)
    }

    @Test("the rows of an earlier version stay; its watchers get their mirror; its inbox keeps its sizes")
    func rowsSurvive() throws {
        let older = try Self.written(byVersions: 1)
        try older.write { db in
            try db.execute(sql: "INSERT INTO watch VALUES ('alice', 'ipad', 'once', 1, 1, 0, 1), ('bob', 'ipad', 'every', 2, 2, 0, 1)")
            try db.execute(sql: "INSERT INTO outbox (key, topic, payload, retain) VALUES ('k', 't', x'01', 1)")
            try db.execute(sql: "INSERT INTO inbox (topic, payload) VALUES ('t', x'0203')")
        }
        try StateSchema.prepare(older)
        let (mirrors, outbox, inbox) = try older.read { db in
            (
                try MirrorRecord.order(MirrorRecord.Columns.customer).fetchAll(db).map(\.customer), try OutboxRecord.fetchAll(db),
                try EarlierInboxRecord.fetchAll(db).map(\.request)
            )
        }
        #expect(mirrors == ["alice", "bob"])
        #expect(outbox == [OutboxRecord(seq: 1, key: "k", topic: "t", payload: Data([1]), retain: true, batch: 0, sent: 0)])
        #expect(inbox == [JournaledRequest(seq: 1, topic: "t", payload: [2, 3], size: 0)])
    }

    // MARK: Versions

    @Test("the schema version is recorded in user_version; a migration that runs says from which version to which, once")
    func versionRecorded() throws {
        let older = try Self.written(byVersions: 2)
        let migration = try StateSchema.prepare(older, path: "/data/store.sqlite").migration
        #expect(migration == SchemaVersion(path: "/data/store.sqlite", from: 2, to: Self.released.count))
        #expect(migration?.description == "migrated /data/store.sqlite from schema version 2 to \(Self.released.count) (RestockAlerter \(RestockVersion.current))")
        #expect(try older.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Self.released.count)
        #expect(try StateSchema.prepare(older).migration == nil, "nothing ran the second time")
    }

    @Test("a state written by a newer version — a migration this binary does not know, or a higher user_version — is refused in one line naming the file, and left as it was")
    func newerVersionRefused() throws {
        let known = Self.released.count
        let unknownMigration = try Self.written(byVersions: known)
        try unknownMigration.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')") }
        let higherVersion = try Self.written(byVersions: known)
        try higherVersion.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = \(known + 3)") }
        for (queue, version) in [(unknownMigration, known + 1), (higherVersion, known + 3)] {
            let before = try Self.schema(of: queue)
            let error = #expect(throws: RestockMQTTError.self) { try StateSchema.prepare(queue, path: "/data/store.sqlite") }
            #expect(error == .dataDirectoryOfNewerVersion(file: "/data/store.sqlite", schemaVersion: version, knownVersion: known))
            let line = error?.description ?? ""
            #expect(line.hasPrefix("/data/store.sqlite was written by a newer RestockAlerter (schema version \(version); RestockAlerter"), "\(line)")
            #expect(line.contains("restore a backup taken before the upgrade") && !line.contains("\n"), "\(line)")
            #expect(try Self.schema(of: queue) == before)
        }
    }

    @Test("a request log written by a newer version is refused too")
    func newerLogRefused() throws {
        let queue = try DatabaseQueue()
        _ = try RequestLog(queue, path: "/data/journal.sqlite")
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 3") }
        #expect(throws: RestockMQTTError.dataDirectoryOfNewerVersion(file: "/data/journal.sqlite", schemaVersion: 3, knownVersion: 2)) {
            try RequestLog(queue, path: "/data/journal.sqlite")
        }
    }
}
