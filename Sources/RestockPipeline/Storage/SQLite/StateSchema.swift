import GRDB

/// The schema of the store's state (`store.sqlite`), in one `DatabaseMigrator`.
///
/// Each file records the names of the migrations it has run: a migration is never renamed nor changed once
/// released, and a change of the schema is a new migration at the end. A new file runs them all, a file of an
/// earlier version the ones it has not run yet; both end with the same schema (StateSchemaTests).
enum StateSchema {
    /// Prepares the state in `writer` for use: refuses a file of a newer version, runs the migrations it has not run
    /// yet (``SchemaVersion``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    /// - Returns: Whether it held none of the store's tables before (a new file, or one emptied to 0 bytes), and the
    ///   migration that ran, if any.
    @discardableResult
    static func prepare(_ writer: any DatabaseWriter, path: String? = nil) throws -> (isNew: Bool, migration: SchemaVersion?) {
        let path = path ?? writer.path
        let isNew = try storageAccess(.open, path) {
            try writer.read { db in try !db.tableExists(MetaRecord.databaseTableName) && !db.tableExists(WatchTable.name) }
        }
        let migration = try SchemaVersion.migrate(writer, with: migrator, path: path)
        return (isNew, migration)
    }

    /// Every migration, oldest first.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE counter (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                    CREATE TABLE watch (
                        customer TEXT NOT NULL, sku TEXT NOT NULL, mode TEXT NOT NULL,
                        minQuantity INTEGER NOT NULL, position INTEGER NOT NULL UNIQUE,
                        since REAL NOT NULL, -- seconds since 2001-01-01, as Date keeps them (exact round trip)
                        waiting INTEGER NOT NULL,
                        PRIMARY KEY (customer, sku));
                    CREATE TABLE inventory (sku TEXT PRIMARY KEY NOT NULL, quantity INTEGER NOT NULL);
                    CREATE TABLE inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, payload BLOB NOT NULL);
                    CREATE TABLE outbox (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
                        payload BLOB NOT NULL, retain INTEGER NOT NULL);
                    """)
        }
        migrator.registerMigration("v2: alert batches in the outbox") { db in
            // A row with `batch` > 0 holds that many alerts of one stock change (an ``AlertBatch``), of which
            // the first `sent` are acknowledged.
            try db.execute(
                sql: """
                    ALTER TABLE outbox ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE outbox ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        migrator.registerMigration("v3: owner, request sizes, retain flags, attempts, dead letters") { db in
            // `size` is the payload's size as received (only its first bytes are kept); `attempts` counted the
            // times applying the request began (the `attempt` file does that now, see AttemptRecord.swift).
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                    ALTER TABLE inbox ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE inbox ADD COLUMN retained INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE deadLetter (
                        seq INTEGER PRIMARY KEY NOT NULL, topic TEXT NOT NULL, payload BLOB NOT NULL,
                        size INTEGER NOT NULL, retained INTEGER NOT NULL, failedAt REAL NOT NULL);
                    """)
        }
        migrator.registerMigration("v4: customers with a mirror") { db in
            // Every customer the store has published a mirror for, also one now watching nothing (`"watching":[]`):
            // after a broker lost its retained messages, each of them gets its mirror back.
            try db.execute(
                sql: """
                    CREATE TABLE mirror (customer TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                    INSERT OR IGNORE INTO mirror (customer) SELECT DISTINCT customer FROM watch;
                    """)
        }
        migrator.registerMigration("v-admin-1: watch expiry") { db in
            // When a watch ends unalerted (seconds since 2001-01-01, as `Date` keeps them); NULL: never, as every watch
            // made before this version. The index is the durable timer: the store asks it for the watches due.
            try db.execute(
                sql: """
                    ALTER TABLE watch ADD COLUMN expiresAt REAL;
                    CREATE INDEX watch_expiresAt ON watch (expiresAt) WHERE expiresAt IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v-admin-2: alert figures, dead-letter reasons") { db in
            // Alerts raised and acknowledged by the broker, per SKU and hour (seconds since 1970 / 3600); hour 0 holds
            // the sums of the hours older than a day (AlertFigures). The outbox row of an alert names its SKU.
            try db.execute(
                sql: """
                    CREATE TABLE alertFigure (
                        sku TEXT NOT NULL, hour INTEGER NOT NULL, raised INTEGER NOT NULL, acknowledged INTEGER NOT NULL,
                        PRIMARY KEY (sku, hour)) WITHOUT ROWID;
                    ALTER TABLE outbox ADD COLUMN sku TEXT;
                    ALTER TABLE deadLetter ADD COLUMN reason TEXT NOT NULL DEFAULT 'the store failed while applying this request';
                    """)
        }
        migrator.registerMigration("v-lease-1: the data directory's lease") { db in
            // Who owns the data directory (StoreLease.swift): one row. `epoch` rises with every new owner and every write
            // checks it (a fencing token); `renewals` counts the owner's renewals (a standby watches it change);
            // `renewedAt` is the owner's clock at the last one (seconds since 1970); `locked` says whether the owner holds
            // store.lock; `owner` is empty when no process owns the directory.
            try db.execute(
                sql: """
                    CREATE TABLE lease (
                        id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL, owner TEXT NOT NULL,
                        renewals INTEGER NOT NULL, renewedAt REAL NOT NULL, locked INTEGER NOT NULL);
                    INSERT INTO lease (id, epoch, owner, renewals, renewedAt, locked) VALUES (1, 0, '', 0, 0, 0);
                    """)
        }
        return migrator
    }
}
