import Foundation
import GRDB
import RestockCore
import Synchronization

/// The store's durable state (DESIGN §5) in its data directory: `store.sqlite` holds watches with their
/// positions, inventory, the position and alert counters, how far the request log has been applied, and the
/// outbox of messages committed but not yet acknowledged by the broker; `journal.sqlite` (``RequestLog``) holds
/// the requests received but not yet applied.
///
/// WAL mode with `synchronous=NORMAL`: a committed transaction survives the process being killed.
/// A lock on the directory keeps a second store process out.
package final class StoreDatabase: Sendable {
    /// The data directory.
    package let directory: URL
    /// The write-ahead log of requests.
    package let log: RequestLog
    /// The requests being applied.
    private let attempts: AttemptRecord
    private let pool: DatabasePool
    private let lock: DirectoryLock
    /// The place the next outbox row takes: given out here, so that a commit knows the places of its messages
    /// and can pass them on in memory.
    private let nextOutboxSeq: Mutex<Int64>
    /// The thread the running store's SQLite work goes to — the pipeline's stages run there — off Swift's
    /// cooperative pool.
    package let executor = PipelineExecutor(label: "restock.pipeline")

    /// Opens (creating if need be) the database in `directory`, which belongs to one store: the first to
    /// open it with its id claims it.
    /// - Parameter store: The store that opens it; `nil` to open it without checking or claiming (tools).
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process holds it;
    ///   ``RestockMQTTError/dataDirectoryOfAnotherStore(_:owner:)`` when it belongs to another store.
    package init(directory: URL, store: StoreID? = nil) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StorageError(.open, directory.path, cause: error)
        }
        self.directory = directory
        self.lock = try DirectoryLock(directory: directory)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let statePath = directory.appendingPathComponent(Self.fileName).path
        let stateIsNew: Bool
        (pool, stateIsNew) = try storageAccess(.open, statePath) {
            let pool = try DatabasePool(path: statePath, configuration: configuration)
            // A file with no tables is new, whether it was just made or emptied (truncated to 0 bytes).
            let isNew = try pool.read { db in try !db.tableExists("meta") && !db.tableExists("watch") }
            try Self.migrator.migrate(pool)
            return (pool, isNew)
        }
        log = try RequestLog(directory: directory)
        attempts = try AttemptRecord(directory: directory)
        let pool = self.pool
        nextOutboxSeq = Mutex(try storageAccess(.read, statePath) {
            try pool.read { db in
                // Past every place given out before, also to rows since acknowledged.
                let used = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0
                return max(used, try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM outbox") ?? 0) + 1
            }
        })
        if let store { try claim(for: store) }
        try checkTogether(stateIsNew: stateIsNew)
        try adoptInbox()
    }

    /// The store's state in the data directory.
    package static let fileName = "store.sqlite"

    /// The path of the store's state.
    private var statePath: String { directory.appendingPathComponent(Self.fileName).path }

    /// Reads the store's state; a failure names the file.
    private func read<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try storageAccess(.read, statePath) { try pool.read(body) }
    }

    /// Writes the store's state in one transaction; a failure names the file and keeps SQLite's result code.
    private func write<T>(_ body: (Database) throws -> T) throws(StorageError) -> T {
        try FaultInjection.failIfDiskFull(writing: statePath)
        return try storageAccess(.write, statePath) { try pool.write(body) }
    }

    /// Limits the store's state to `pages` pages of its file from now on (`nil`: no limit), as a full disk would: a
    /// commit that needs more fails with `SQLITE_FULL`. For tests.
    package func limitSize(toPages pages: Int?) throws {
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = \(pages ?? 4_294_967_294)") }
    }

    /// How many pages the store's state holds now.
    package func pageCount() throws -> Int { try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 } }

    /// Refuses a data directory whose two files cannot be the two halves of one store — one deleted, emptied or
    /// replaced by an older copy — rather than start on it and lose, or apply again, what the missing part held
    /// (docs/contract.md, "Durability and redelivery"). Never starts with less than the log and the state together hold.
    private func checkTogether(stateIsNew: Bool) throws {
        let logged = try log.lastPlace()
        let applied = try processedThrough()
        let state = statePath, journal = log.path
        let remedy = "restore both files from one backup, or remove both to start an empty store"
        if stateIsNew, logged > 0 {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: state,
                problem: "the store's state \(state) is missing, empty or new, but the request log \(journal) beside it has given out "
                    + "places up to \(logged): the watches and stock those requests made would be lost",
                remedy: remedy)
        }
        // The log the state was written with: recorded at the first open of the pair, checked at every other.
        let identity = try log.identity()
        let recorded = try storageAccess(.write, state) {
            try write { db in
                try db.execute(sql: "INSERT OR IGNORE INTO meta (key, value) VALUES ('log', ?)", arguments: [identity])
                return try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'log'")
            }
        }
        if recorded != identity {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: journal,
                problem: "the request log \(journal) is not the one the store's state \(state) was written with (deleted, emptied or "
                    + "replaced): acknowledged requests it held may be lost",
                remedy: remedy)
        }
        if applied > logged {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: journal,
                problem: "the request log \(journal) is older than the store's state \(state) (requests up to \(applied) applied, "
                    + "the log ends at \(logged)): requests acknowledged since may be lost",
                remedy: remedy)
        }
        // The log forgets requests once the state has them: a state that has not applied all it forgot is older than
        // the log (a copy from before, or store.sqlite copied without its -wal), and the requests in between are gone.
        let forgotten = try log.forgottenThrough()
        if applied < forgotten {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: state,
                problem: "the store's state \(state) is older than its request log \(journal): it has applied requests up to \(applied), "
                    + "but the log has already forgotten those up to \(forgotten), so the ones in between would be lost",
                remedy: remedy)
        }
    }

    /// Moves requests an earlier version journaled into `store.sqlite` to the request log, keeping their places,
    /// and makes sure the log gives out places after every request already applied (a log deleted by hand must
    /// not make new requests look applied).
    private func adoptInbox() throws {
        let old = try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, topic, payload, size, retained FROM inbox ORDER BY seq").map {
                JournaledRequest(seq: $0[0], topic: $0[1], payload: Array($0[2] as Data), size: $0[3], retained: $0[4])
            }
        }
        try log.adopt(old)
        if !old.isEmpty { try write { db in try db.execute(sql: "DELETE FROM inbox") } }
        try log.continue(after: max(processedThrough(), old.last?.seq ?? 0))
    }

    /// Whether a store process holds the directory's lock now (a standby waits while it does).
    package static func isInUse(_ directory: URL) -> Bool { DirectoryLock.isHeld(on: directory) }

    /// Records `instance` as the store process now using the database; returns the one before it (a process
    /// that has stopped or died, since this one holds the lock).
    package func replaceInstance(with instance: String) throws -> String? {
        try write { db in
            let previous = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'instance'")
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('instance', ?)", arguments: [instance])
            return previous
        }
    }

    /// Records `store` as the owner of a database that has none, or checks that it is the owner.
    private func claim(for store: StoreID) throws {
        let owner = try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO meta (key, value) VALUES ('store', ?)", arguments: [store.rawValue])
            return try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'store'")
        }
        guard owner == store.rawValue else {
            throw RestockMQTTError.dataDirectoryOfAnotherStore(directory.path, owner: owner ?? "?")
        }
    }

    /// Reads the state saved in `directory` without taking the directory lock, while a store may be
    /// running on it (for tests and inspection; WAL readers never block the writer).
    package static func snapshot(readingOnly directory: URL) throws -> StoreSnapshot {
        try loadSnapshot(from: readOnlyPool(directory)).snapshot
    }

    /// The queue lengths of the database in `directory`, read as ``snapshot(readingOnly:)`` reads.
    package static func queueLengths(readingOnly directory: URL) throws -> (inbox: Int, outbox: Int, watches: Int) {
        try queueLengths(in: readOnlyPool(directory), log: RequestLog.readingOnly(directory))
    }

    private static func readOnlyPool(_ directory: URL) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabasePool(path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
    }

    private static var migrator: DatabaseMigrator {
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
            // `size` is the payload's size as received (only its first bytes are kept); `attempts` counts the
            // times applying the request began, so one that was being applied when the process died is known.
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
        return migrator
    }

    // MARK: Restore

    /// Everything the store needs to carry on. Rows that do not hold a valid watch or inventory record (a file
    /// changed by hand, or damaged) are left out; ``loadSnapshotReportingSkipped()`` says which.
    package func loadSnapshot() throws -> StoreSnapshot {
        try storageAccess(.read, statePath) { try Self.loadSnapshot(from: pool).snapshot }
    }

    /// ``loadSnapshot()``, with a description of each row it left out.
    package func loadSnapshotReportingSkipped() throws -> (snapshot: StoreSnapshot, skipped: [String]) {
        try storageAccess(.read, statePath) { try Self.loadSnapshot(from: pool) }
    }

    private static func loadSnapshot(from pool: DatabasePool) throws -> (snapshot: StoreSnapshot, skipped: [String]) {
        try pool.read { db in
            var snapshot = StoreSnapshot()
            var skipped: [String] = []
            // Columns by index, not by name: a restart reads every watch, and a name lookup per value doubled it.
            // Each value is converted without trapping: the file is outside input.
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM watch") ?? 0
            snapshot.watches.reserveCapacity(count)
            // SQLite checks each value's type (a file changed by hand may hold anything), so that a valid row's
            // values are read straight from the statement, without a DatabaseValue each.
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT customer, sku, mode, minQuantity, position, since, waiting,
                        typeof(customer) = 'text' AND typeof(sku) = 'text' AND typeof(mode) = 'text'
                        AND typeof(minQuantity) = 'integer' AND typeof(position) = 'integer'
                        AND typeof(since) IN ('real', 'integer') AND typeof(waiting) = 'integer'
                    FROM watch ORDER BY position
                    """)
            // Watches of one SKU come in runs: its identifier is checked once per run, and shared.
            var lastSKU: SKU?
            while let row = try rows.next() {
                guard try row.decode(Bool.self, atIndex: 7),
                    let customer = try? CustomerID(try row.decode(String.self, atIndex: 0)),
                    let sku = Self.sku(try row.decode(String.self, atIndex: 1), reusing: &lastSKU),
                    let mode = WatchMode(rawValue: try row.decode(String.self, atIndex: 2)),
                    case let minQuantity = try row.decode(Int64.self, atIndex: 3), RequestLimits.minQuantity.contains(Int(truncatingIfNeeded: minQuantity)),
                    case let position = try row.decode(Int64.self, atIndex: 4), position > 0,
                    case let since = try row.decode(Double.self, atIndex: 5), since.isFinite
                else {
                    skipped.append("watch \(row.databaseValues.prefix(7).map(\.description).joined(separator: ", "))")
                    continue
                }
                snapshot.watches.append(
                    Watch(
                        customer: customer, sku: sku, mode: mode, minQuantity: Int(minQuantity), position: UInt64(position),
                        since: Date(timeIntervalSinceReferenceDate: since), isWaiting: try row.decode(Int64.self, atIndex: 6) != 0))
            }
            for row in try Row.fetchAll(db, sql: "SELECT sku, quantity FROM inventory") {
                guard let sku = String.fromDatabaseValue(row[0]).flatMap({ try? SKU($0) }),
                    let quantity = Int.fromDatabaseValue(row[1]), RequestLimits.stockSet.contains(quantity)
                else {
                    skipped.append("inventory \(row.databaseValues.map(\.description).joined(separator: ", "))")
                    continue
                }
                snapshot.inventory[sku] = quantity
            }
            var counters: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counter") {
                guard let name = String.fromDatabaseValue(row[0]), let value = Int64.fromDatabaseValue(row[1]), value > 0 else {
                    skipped.append("counter \(row.databaseValues.map(\.description).joined(separator: ", "))")
                    continue
                }
                counters[name] = UInt64(value)
            }
            // Never behind what the rows hold, skipped ones included (they keep their place in the table): a
            // position is never given out twice.
            let highest = try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM watch WHERE typeof(position) = 'integer'") ?? 0
            snapshot.nextPosition = max(counters["nextPosition"] ?? 1, UInt64(max(highest, 0)) &+ 1)
            snapshot.nextAlertSequence = counters["nextAlertSequence"] ?? 1
            return (snapshot, skipped)
        }
    }

    /// `text` as a SKU: the last one read when it is the same text (checked once for a run of watches of one SKU).
    private static func sku(_ text: String, reusing last: inout SKU?) -> SKU? {
        if let last, last.rawValue == text { return last }
        last = try? SKU(text)
        return last
    }

    /// Every customer the store has published a mirror for, watching something or not.
    package func mirroredCustomers() throws -> [CustomerID] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT customer FROM mirror ORDER BY customer").compactMap { try? CustomerID($0) }
        }
    }

    /// The on-hand quantity of every SKU the store has recorded, zeros included.
    package func inventory() throws -> [(SKU, Int)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT sku, quantity FROM inventory ORDER BY sku").compactMap { row in
                guard let sku = try? SKU(row[0] as String) else {
                    throw RestockMQTTError.dataDirectoryDamaged(
                        file: self.statePath, problem: "the inventory holds an invalid SKU \(String(reflecting: row[0] as String))",
                        remedy: "restore the data directory from a backup")
                }
                return (sku, row[1])
            }
        }
    }

    // MARK: Requests

    /// Records a request as received, in the request log, before it is acknowledged to the broker; returns its place.
    /// - Parameters:
    ///   - payload: The payload, or its first bytes when it is larger than any request may be.
    ///   - size: The size of the payload as received; `payload.count` when `nil`.
    ///   - retained: Whether it came with the retain flag.
    @discardableResult
    package func journal(topic: String, payload: [UInt8], size: Int? = nil, retained: Bool = false) throws -> JournaledRequest {
        let size = size ?? payload.count
        let seq = try log.append(topic: topic, payload: payload, size: size, retained: retained)
        return JournaledRequest(seq: seq, topic: topic, payload: payload, size: size, retained: retained)
    }

    /// The place in the request log of the last request applied (or set aside); 0 before the first.
    package func processedThrough() throws -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'processedThrough'") ?? 0 }
    }

    /// The requests of the log not yet applied, oldest first, after `seq` (recovery).
    package func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        try log.requests(after: seq, limit: limit)
    }

    /// The requests being applied when the store last recorded it (``beginAttempt(_:)``), and whether the
    /// process died of a fault (a trap, a bad access, an abort) while applying them.
    package func lastAttempt() throws -> (attempt: Attempt, faulted: Bool, kills: Int)? { try attempts.read() }

    /// Records that applying these requests begins, before the first of them is applied: if the process dies
    /// while they are applied, the next start knows which they were (see ``Attempt``).
    /// - Parameter kills: How many times the store died without a fault while applying this attempt's one request
    ///   alone before.
    package func beginAttempt(_ attempt: Attempt, kills: Int = 0) throws { try attempts.write(attempt, kills: kills) }

    /// The attempt begun last is over: its requests are committed (or it failed with an error, not a fault).
    package func endAttempt() { attempts.finished() }

    /// The attempt begun last failed with an error: its requests are the cause, as with a fault.
    package func failAttempt() { attempts.failed() }

    /// Sets a request that could not be applied aside in the dead-letter table, records it as processed, and
    /// queues the error that tells its sender, in one transaction; returns that error as committed.
    package func deadLetter(_ request: JournaledRequest, error: Publication, at date: Date) throws -> CommittedPublication {
        let seq = nextOutboxSeq.withLock { next in defer { next += 1 }; return next }
        try write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO deadLetter (seq, topic, payload, size, retained, failedAt) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [request.seq, request.topic, Data(request.payload), request.size, request.retained, date.timeIntervalSince1970])
            try db.execute(
                sql: "INSERT OR REPLACE INTO outbox (seq, key, topic, payload, retain, batch) VALUES (?, ?, ?, ?, ?, 0)",
                arguments: [seq, error.key, error.topic, Data(error.payload), error.retain])
            try Self.recordProcessed(through: request.seq, in: db)
        }
        return CommittedPublication(seq: seq, publication: error)
    }

    private static func recordProcessed(through seq: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO counter (name, value) VALUES ('processedThrough', ?)").execute(arguments: [seq])
    }

    /// The requests set aside because applying them killed the store, oldest first.
    package func deadLetters() throws -> [JournaledRequest] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, topic, payload, size, retained FROM deadLetter ORDER BY seq").map {
                JournaledRequest(seq: $0[0], topic: $0[1], payload: Array($0[2] as Data), size: $0[3], retained: $0[4])
            }
        }
    }

    // MARK: Commit

    /// Applies a batch of changes in one transaction: watches, inventory, counters, the messages to
    /// publish, and how far the request log is applied. Returns the messages as committed, each with its place
    /// in the outbox, to be passed to the publisher in memory.
    @discardableResult
    package func commit(_ changes: StoreChanges) throws -> [CommittedPublication] {
        let first = nextOutboxSeq.withLock { next in
            defer { next += Int64(changes.publications.count) }
            return next
        }
        let committed = changes.publications.enumerated().map { CommittedPublication(seq: first + Int64($0.offset), publication: $0.element) }
        try write { db in
            // Rows go in many to a statement: SQLite then parses nothing and GRDB binds in bulk, which is most of
            // the cost of a row when a restock writes thousands.
            // Watch changes apply in the order they were made; runs of saves or deletes go many to a statement.
            var run: (saves: [Watch], deletes: [WatchKey]) = ([], [])
            for change in changes.watchChanges {
                switch change {
                case .save(let watch):
                    if !run.deletes.isEmpty { try Self.write(&run, in: db) }
                    run.saves.append(watch)
                case .remove(let key):
                    if !run.saves.isEmpty { try Self.write(&run, in: db) }
                    run.deletes.append(key)
                case .setWaiting(let waiting, let positions):
                    try Self.write(&run, in: db)
                    // One statement for a whole line of watches: a restock to 100,000 `every` customers flips
                    // 100,000 flags, which one row at a time was most of its commit.
                    try db.cachedStatement(sql: "UPDATE watch SET waiting = ? WHERE position IN (SELECT value FROM json_each(?))")
                        .execute(arguments: [waiting, Self.jsonArray(positions)])
                case .removePositions(let positions):
                    try Self.write(&run, in: db)
                    try db.cachedStatement(sql: "DELETE FROM watch WHERE position IN (SELECT value FROM json_each(?))")
                        .execute(arguments: [Self.jsonArray(positions)])
                }
            }
            try Self.write(&run, in: db)
            try BulkStatement(head: "INSERT OR REPLACE INTO inventory (sku, quantity) VALUES ", columns: 2)
                .execute(changes.inventory.map { [$0.key.rawValue, $0.value] }, in: db)
            if let counters = changes.counters {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO counter (name, value) VALUES ('nextPosition', ?), ('nextAlertSequence', ?)",
                    arguments: [Int64(counters.nextPosition), Int64(counters.nextAlertSequence)])
            }
            // A retained topic keeps only its newest version waiting: REPLACE gives it a new seq (rows of one
            // statement are inserted in order, so a later version in the same batch still wins).
            try BulkStatement(head: "INSERT OR IGNORE INTO mirror (customer) VALUES ", columns: 1)
                .execute(changes.mirrored.sorted().map { [$0.rawValue] }, in: db)
            try BulkStatement(head: "INSERT OR REPLACE INTO outbox (seq, key, topic, payload, retain, batch) VALUES ", columns: 6)
                .execute(committed.map { [$0.seq, $0.publication.key, $0.publication.topic, Data($0.publication.payload), $0.publication.retain, $0.publication.alertCount] }, in: db)
            if let seq = changes.processedThrough { try Self.recordProcessed(through: seq, in: db) }
        }
        return committed
    }

    /// Writes a run of saves (in key order; a key saved twice keeps its last version) or deletes, and empties it.
    private static func write(_ run: inout (saves: [Watch], deletes: [WatchKey]), in db: Database) throws {
        if !run.saves.isEmpty {
            // An upsert changes a known watch's row in place (a REPLACE would delete it and insert it again,
            // rewriting both of its indexes). Every column is set: a watch dropped and made again within one
            // batch comes back with a new position. The sort is stable, so a later save of a key stays later.
            let rows: [[(any DatabaseValueConvertible)?]] = run.saves.sorted { ($0.customer, $0.sku) < ($1.customer, $1.sku) }.map { watch in
                [
                    watch.customer.rawValue, watch.sku.rawValue, watch.mode.rawValue, watch.minQuantity,
                    Int64(watch.position), watch.since.timeIntervalSinceReferenceDate, watch.isWaiting,
                ]
            }
            try BulkStatement(
                head: "INSERT INTO watch (customer, sku, mode, minQuantity, position, since, waiting) VALUES ",
                columns: 7,
                tail: """
                     ON CONFLICT (customer, sku) DO UPDATE SET mode = excluded.mode, minQuantity = excluded.minQuantity,
                    position = excluded.position, since = excluded.since, waiting = excluded.waiting
                    """
            ).execute(rows, in: db)
        }
        if !run.deletes.isEmpty {
            try BulkStatement(head: "DELETE FROM watch WHERE (customer, sku) IN (VALUES ", columns: 2, tail: ")")
                .execute(run.deletes.map { [$0.customer.rawValue, $0.sku.rawValue] }, in: db)
        }
        run = ([], [])
    }

    /// `[1,2,3]`: positions for `json_each`.
    private static func jsonArray(_ positions: [UInt64]) -> String {
        "[" + positions.map(String.init).joined(separator: ",") + "]"
    }

    // MARK: Outbox

    /// Messages committed but not yet acknowledged, oldest first, after `seq`.
    package func pendingPublications(after seq: Int64, limit: Int) throws -> [PendingPublication] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT seq, topic, payload, retain, batch, sent FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
                arguments: [seq, limit]
            ).map {
                PendingPublication(
                    seq: $0[0], topic: $0[1], payload: Array($0[2] as Data), retain: $0[3], alertCount: $0[4], sent: $0[5])
            }
        }
    }

    /// Records acknowledgements in one transaction: single messages are forgotten (by the version published:
    /// a newer one of a retained topic stays, under its own seq); a batch records how many
    /// of its alerts, from the first, are acknowledged, and is forgotten when that is all of them.
    package func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws {
        guard !seqs.isEmpty || !batches.isEmpty else { return }
        try write { db in
            let forget = try db.cachedStatement(sql: "DELETE FROM outbox WHERE seq = ?")
            for seq in seqs { try forget.execute(arguments: [seq]) }
            let progress = try db.cachedStatement(sql: "UPDATE outbox SET sent = ? WHERE seq = ? AND batch > ?")
            let finish = try db.cachedStatement(sql: "DELETE FROM outbox WHERE seq = ? AND batch <= ?")
            for batch in batches {
                try progress.execute(arguments: [batch.sent, batch.seq, batch.sent])
                try finish.execute(arguments: [batch.seq, batch.sent])
            }
        }
    }

    /// How many rows each queue holds (for tests and logs).
    package func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) {
        try storageAccess(.read, statePath) { try Self.queueLengths(in: pool, log: log) }
    }

    private static func queueLengths(in pool: DatabasePool, log: RequestLog?) throws -> (inbox: Int, outbox: Int, watches: Int) {
        let processed = try pool.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'processedThrough'") ?? 0 }
        let inbox = try log?.count(after: processed) ?? 0
        return try pool.read { db in
            (
                // Requests journaled by an earlier version, and not yet carried over to the log, count too.
                inbox + (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM inbox") ?? 0),
                // Messages, not rows: a batch counts the alerts it still has to send.
                try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(CASE WHEN batch > 0 THEN batch - sent ELSE 1 END), 0) FROM outbox") ?? 0,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM watch") ?? 0
            )
        }
    }
}
