import GRDB

// The rows of the store's state that are not watches (WatchTable.swift), outbox messages (Outbox.swift) or dead
// letters (DeadLetters.swift), as GRDB records. A commit writes inventory and mirror rows many to a statement
// (BulkStatement.swift); the rest are few per transaction.

/// A row of `counter`: one of the store's counters.
struct CounterRecord: Codable, Hashable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "counter"

    /// The counters the store keeps.
    enum Name: String {
        /// The place in the request log of the last request applied (or set aside).
        case processedThrough
        /// The position the next new watch takes.
        case nextPosition
        /// The sequence number the next alert takes.
        case nextAlertSequence
        /// The last place of the request log known synced to the disk when the state was committed: a log that a power
        /// cut left ending before the state's `processedThrough`, but not before this, lost only requests never
        /// acknowledged to the broker (``PairCheck``).
        case journalSyncedThrough
    }

    var name: String
    var value: Int64

    /// The table's columns.
    enum Columns {
        static let name = Column(CodingKeys.name)
        static let value = Column(CodingKeys.value)
    }

    init(_ name: Name, _ value: Int64) {
        self.name = name.rawValue
        self.value = value
    }

    /// The value of counter `name`; `nil` before it is first recorded.
    static func value(of name: Name, in db: Database) throws -> Int64? {
        try filter(key: name.rawValue).select(Columns.value, as: Int64.self).fetchOne(db)
    }

    /// Records that the requests of the log up to `seq` are applied, in the transaction of `db`.
    static func recordProcessed(through seq: Int64, in db: Database) throws {
        try record(.processedThrough, seq, in: db)
    }

    /// Records `value` for counter `name`, in the transaction of `db`: a statement prepared once per connection, on
    /// the path of every commit (a record's `insert` prepared its statement, and ran in a savepoint of its own, each time).
    static func record(_ name: Name, _ value: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(databaseTableName) (name, value) VALUES (?, ?)")
            .execute(arguments: [name.rawValue, value])
    }
}

/// A row of `meta`: what the state knows of itself, by key.
struct MetaRecord: Codable, Hashable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "meta"

    /// What the state records.
    enum Key: String {
        /// The store that owns the data directory.
        case store
        /// The store process that used it last.
        case instance
        /// The identity of the request log it was written with.
        case log
        /// When `restock backup` made this copy: a store started on it may be older than what the broker holds, and
        /// makes the broker agree with it before it takes requests; the mark goes then.
        case restored
    }

    var key: String
    var value: String

    /// The table's columns.
    enum Columns {
        static let key = Column(CodingKeys.key)
        static let value = Column(CodingKeys.value)
    }

    init(_ key: Key, _ value: String) {
        self.key = key.rawValue
        self.value = value
    }

    /// The value recorded under `key`, if any.
    static func value(of key: Key, in db: Database) throws -> String? {
        try filter(key: key.rawValue).select(Columns.value, as: String.self).fetchOne(db)
    }
}

/// A row of `inventory`: the on-hand quantity of one SKU.
struct StockRecord: Codable, Hashable, FetchableRecord, PersistableRecord, BulkInsertable {
    static let databaseTableName = "inventory"

    var sku: String
    var quantity: Int

    /// The table's columns.
    enum Columns {
        static let sku = Column(CodingKeys.sku)
        static let quantity = Column(CodingKeys.quantity)
    }

    static let insertedColumns = [Columns.sku, Columns.quantity]

    var insertedValues: [(any DatabaseValueConvertible)?] { [sku, quantity] }
}

/// A row of `mirror`: a customer the store has published a mirror for, watching something or not.
struct MirrorRecord: Codable, Hashable, FetchableRecord, PersistableRecord, BulkInsertable {
    static let databaseTableName = "mirror"

    var customer: String

    /// The table's columns.
    enum Columns {
        static let customer = Column(CodingKeys.customer)
    }

    static let insertedColumns = [Columns.customer]

    var insertedValues: [(any DatabaseValueConvertible)?] { [customer] }
}
