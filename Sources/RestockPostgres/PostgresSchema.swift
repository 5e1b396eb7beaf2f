import PostgresNIO
import RestockPipeline

/// The schema of the store's storage in PostgreSQL: tables prefixed `restock_`, every row keyed by its store, so that
/// several stores share one database. `restock_schema_version` records each migration run, by number.
///
/// Migrations run when a storage is opened, in one transaction under a transaction-level advisory lock, so that two
/// stores opening one database at once run them once. A database whose schema is of a newer version than this binary
/// knows is refused before anything is written to it, as SQLite's ``SchemaVersion`` refuses a file: a downgrade would
/// lose what the newer version keeps (docs/operations.md, "Upgrading").
enum PostgresSchema {
    /// The advisory lock the migrations run under ("restock" in ASCII).
    static let lockKey: Int64 = 0x72_65_73_74_6F_63_6B

    /// Every migration, oldest first: its statements, one each (PostgreSQL's extended protocol runs one at a time). A
    /// released migration is never changed; a change of the schema is a new one at the end.
    static let migrations: [[String]] = [
        [
            // The store's own row: the last place given to a request (trimmed ones included), the highest place a message
            // was ever written at, the store process that used it last, the mark of a restored copy.
            """
            CREATE TABLE restock_store (
                store text PRIMARY KEY, journal_place bigint NOT NULL DEFAULT 0, outbox_place bigint NOT NULL DEFAULT 0,
                instance text, restored text)
            """,
            // The lease (StoreLease.swift's, on the database's clock): `epoch` rises with every new owner and every write
            // checks it; `renewals` counts the owner's renewals; `released` is set at a clean stop.
            """
            CREATE TABLE restock_lease (
                store text PRIMARY KEY, epoch bigint NOT NULL, owner text NOT NULL, renewals bigint NOT NULL,
                renewed_at timestamptz NOT NULL, released boolean NOT NULL)
            """,
            """
            CREATE TABLE restock_journal (
                store text NOT NULL, seq bigint NOT NULL, topic text NOT NULL, payload bytea NOT NULL, size bigint NOT NULL,
                retained boolean NOT NULL, PRIMARY KEY (store, seq))
            """,
            "CREATE TABLE restock_counter (store text NOT NULL, name text NOT NULL, value bigint NOT NULL, PRIMARY KEY (store, name))",
            // `since` and `expires_at` are seconds since 2001-01-01, as `Date` keeps them (an exact round trip).
            """
            CREATE TABLE restock_watch (
                store text NOT NULL, customer text NOT NULL, sku text NOT NULL, mode text NOT NULL, min_quantity bigint NOT NULL,
                position bigint NOT NULL, since double precision NOT NULL, waiting boolean NOT NULL, expires_at double precision,
                PRIMARY KEY (store, customer, sku), UNIQUE (store, position))
            """,
            "CREATE INDEX restock_watch_expiry ON restock_watch (store, expires_at) WHERE expires_at IS NOT NULL",
            "CREATE TABLE restock_inventory (store text NOT NULL, sku text NOT NULL, quantity bigint NOT NULL, PRIMARY KEY (store, sku))",
            "CREATE TABLE restock_mirror (store text NOT NULL, customer text NOT NULL, PRIMARY KEY (store, customer))",
            """
            CREATE TABLE restock_outbox (
                store text NOT NULL, seq bigint NOT NULL, key text NOT NULL, topic text NOT NULL, payload bytea NOT NULL,
                retain boolean NOT NULL, batch bigint NOT NULL, sent bigint NOT NULL, sku text,
                PRIMARY KEY (store, seq), UNIQUE (store, key))
            """,
            """
            CREATE TABLE restock_dead_letter (
                store text NOT NULL, seq bigint NOT NULL, topic text NOT NULL, payload bytea NOT NULL, size bigint NOT NULL,
                retained boolean NOT NULL, failed_at double precision NOT NULL, reason text NOT NULL, PRIMARY KEY (store, seq))
            """,
            // Alerts raised and acknowledged per SKU and hour (seconds since 1970 / 3600); hour 0 holds the older ones.
            """
            CREATE TABLE restock_alert_figure (
                store text NOT NULL, sku text NOT NULL, hour bigint NOT NULL, raised bigint NOT NULL, acknowledged bigint NOT NULL,
                PRIMARY KEY (store, sku, hour))
            """,
            // The requests being applied (SQLite's `attempt` file).
            """
            CREATE TABLE restock_attempt (
                store text PRIMARY KEY, first bigint NOT NULL, last bigint NOT NULL, suspects_through bigint NOT NULL,
                faulted boolean NOT NULL, kills integer NOT NULL)
            """,
        ],
        [
            // A stock change flips `waiting` of every watch it alerts or re-arms: 100,000 rows in one statement for a SKU
            // 100,000 customers watch. With half of each page kept free, each row's new version fits on its page: the
            // update writes no index entry (a HOT update), and the next one prunes the old versions there, so the table
            // and its indexes keep their size. Packed full, every such update wrote a new entry in each index and a copy
            // of the rows elsewhere, until autovacuum: 0.7 s, then 1.1 s after ten stock changes, for 100,000 rows, against
            // 0.16–0.24 s (docs/benchmarks.md, "On PostgreSQL"). Pages written before keep their packing until
            // `VACUUM FULL restock_watch` (docs/operations.md, "Upgrading").
            "ALTER TABLE restock_watch SET (fillfactor = 50)"
        ],
        // Each write of the store one statement, one round trip (docs/benchmarks.md, "B4 on PostgreSQL, one statement
        // per write"): each statement sent is a wait on this machine's threads (≈ 0.3 ms), and a transaction of
        // `BEGIN`, the fence, its statements and `COMMIT` waited for each. The functions of PostgresFunctions.swift.
        functions.map(\.definition),
        // The journal's append, the state's commit and the acknowledgements commit before they answer
        // (PostgresProcedures.swift): the server's answer to a statement alone came before its commit.
        procedures.map(\.definition),
    ]

    /// The version this binary knows: how many migrations it has.
    static var knownVersion: Int { migrations.count }

    /// What ran when the schema was made ready: the version before, and after.
    struct Change: Sendable, Equatable {
        let from: Int
        let to: Int
        /// The functions made again because the database lacked them (``restoreFunctions(_:)``).
        var restoredFunctions: [String] = []
    }

    /// Makes the schema of the database ready: refuses a newer one, runs the migrations it has not run yet.
    /// - Returns: What ran; `nil` when the schema was at this version already.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)`` for a schema of a
    ///   newer version, with nothing written; a ``StorageError``.
    static func prepare(_ session: PostgresSession) throws -> Change? {
        let known = knownVersion
        let outcome: Result<Change?, RestockMQTTError> = try session.transaction(.open) { statements in
            try statements.execute("SELECT pg_advisory_xact_lock(\(lockKey))")
            let current = try version(statements)
            if current > known {
                return .failure(
                    RestockMQTTError.dataDirectoryOfNewerVersion(file: session.settings.location, schemaVersion: current, knownVersion: known))
            }
            guard current < known else {
                let restored = try restoreFunctions(statements)
                try checkFunctionsExecutable(statements)
                return .success(restored.isEmpty ? nil : Change(from: current, to: known, restoredFunctions: restored))
            }
            if current == 0 {
                try statements.execute(
                    "CREATE TABLE restock_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            }
            for version in current..<known {
                for statement in migrations[version] { try statements.execute(PostgresQuery(unsafeSQL: statement)) }
                try statements.execute("INSERT INTO restock_schema_version (version) VALUES (\(version + 1))")
            }
            return .success(Change(from: current, to: known))
        }
        // Thrown after the transaction: a refusal rolls back, so that nothing is written.
        return try outcome.get()
    }

    /// Refuses, reading only, a schema of a newer version than this release knows.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)``.
    static func check(_ current: Int, location: String) throws {
        if current > knownVersion {
            throw RestockMQTTError.dataDirectoryOfNewerVersion(file: location, schemaVersion: current, knownVersion: knownVersion)
        }
    }

    /// The version of the schema: the highest migration recorded; 0 without the version table.
    static func version(_ statements: Statements) throws -> Int {
        let table = try statements.query("SELECT to_regclass('restock_schema_version') IS NOT NULL")
        guard try table.first?.decode(Bool.self) == true else { return 0 }
        let rows = try statements.query("SELECT COALESCE(MAX(version), 0)::int8 FROM restock_schema_version")
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }
}
