import Foundation
import PostgresNIO
import RestockCore
import RestockPipeline
import Synchronization

/// A store's storage in PostgreSQL (``PostgresStorage``): everything the SQLite backend (``StoreDatabase``, the
/// specification) keeps in `store.sqlite`, `journal.sqlite` and the `attempt` file, in `restock_` tables keyed by the
/// store (``PostgresSchema``), and the same answers to every read of ``StoreStorage``.
///
/// Every write is one transaction that checks the lease's epoch first (``PostgresFence``). Its calls block on one
/// connection (``PostgresSession``), so the running store calls them on ``executor``, a thread of its own.
///
/// What differs, by nature: the journal and the state are in one database, so there is no pair of files to check
/// against each other; there is no directory lock (``holdsLock`` is always true); a checkpoint vacuums the tables that
/// hold customers' data.
package final class PostgresStoreStorage: StoreStorage {
    /// The store whose rows these are.
    package let store: StoreID
    let session: PostgresSession
    /// How far the store's journal goes, as its sessions saw it committed.
    let journalMark: JournalMark
    /// The lease this storage took (``ownership``), on a session of its own.
    let lease: PostgresLease
    /// The migration that ran when it was opened, if any.
    let schemaChange: PostgresSchema.Change?
    /// The place the next outbox message takes: given out before the commit that writes it, as SQLite's `Outbox` does.
    let nextOutboxPlace: Mutex<Int64>
    /// How far this process knows the journal committed, and whether an append since may have committed unanswered
    /// (``JournalConfirmation``).
    let journalConfirmation = Mutex(JournalConfirmation(place: 0))
    /// The thread the running store's storage calls go to, off Swift's cooperative pool.
    package let pipelineExecutor = PipelineExecutor(label: "restock.postgres")

    /// The database, as errors name it.
    var location: String { session.settings.location }

    /// Opens the storage of `store` in the database of `settings`: makes the schema ready, then takes the lease as
    /// `claim` says (``PostgresStorage/open(for:claim:now:)``). Its sessions use only servers that hold what `mark` says
    /// the store's journal holds (a standby's looks advanced it).
    init(settings: PostgresSettings, store: StoreID, claim: StorageClaim, mark: JournalMark) throws {
        self.store = store
        journalMark = mark
        session = PostgresSession(settings: settings, continuity: mark)
        schemaChange = try PostgresSchema.prepare(session)
        let fence = PostgresFence(store: store)
        // The lease on a connection of its own: its renewal never waits behind a long commit (the fence's row lock lets
        // it through: ``PostgresFence``).
        lease = PostgresLease(session: PostgresSession(settings: settings, continuity: mark), store: store, fence: fence)
        try Self.makeRows(of: store, in: session)
        let epoch = try LeaseClaim(session: session, store: store).take(claim)
        fence.hold(epoch)
        nextOutboxPlace = Mutex(0)
        let last = try write { statements in
            // The journal gives places after every request applied, whatever was recorded (SQLite's EarlierInbox).
            try statements.execute(
                """
                UPDATE restock_store SET journal_place = GREATEST(journal_place, COALESCE((
                    SELECT value FROM restock_counter WHERE store = \(store.rawValue) AND name = 'processedThrough'), 0))
                WHERE store = \(store.rawValue)
                """)
            let journal = try statements.query("SELECT journal_place FROM restock_store WHERE store = \(store.rawValue)")
            let place = try journal.first?.decode(Int64.self) ?? 0
            mark.advance(to: place)
            journalConfirmation.withLock { $0.place = place }
            let rows = try statements.query(
                """
                SELECT GREATEST(outbox_place, COALESCE((SELECT MAX(seq) FROM restock_outbox WHERE store = \(store.rawValue)), 0))
                FROM restock_store WHERE store = \(store.rawValue)
                """)
            return try rows.first?.decode(Int64.self) ?? 0
        }
        nextOutboxPlace.withLock { $0 = last + 1 }
    }

    /// Makes the rows of `store` that every other row hangs on, if it has none yet: its own, and its lease, released.
    private static func makeRows(of store: StoreID, in session: PostgresSession) throws(StorageError) {
        try session.transaction(.open) { statements in
            try statements.execute("INSERT INTO restock_store (store) VALUES (\(store.rawValue)) ON CONFLICT DO NOTHING")
            try statements.execute(
                """
                INSERT INTO restock_lease (store, epoch, owner, renewals, renewed_at, released)
                VALUES (\(store.rawValue), 0, '', 0, 'epoch', true) ON CONFLICT DO NOTHING
                """)
        }
    }

    deinit {
        session.disconnect()
        lease.disconnect()
    }

    // MARK: Transactions

    /// Runs `body` in one transaction fenced by the lease: refused with ``StorageError/Kind/leaseLost`` once a newer
    /// owner holds it, and nothing of it is written.
    @discardableResult
    func write<T>(_ body: (Statements) throws -> T) throws(StorageError) -> T {
        let fence = lease.fence, location = location
        return try session.transaction(.write, fence: { try fence.check($0, path: location) }, body)
    }

    /// Runs `statement`, one statement fenced by the lease in the database (`restock_fence($1, $2)`, called before it
    /// writes, with the store and the epoch held), as a transaction of its own: one round trip, where ``write(_:)`` waits
    /// for `BEGIN`, the fence, each statement and `COMMIT` in turn. Refused as ``write(_:)`` is, and nothing of it is
    /// written.
    @discardableResult
    func fenced(_ statement: (_ store: String, _ epoch: Int64?) -> PostgresQuery) throws(StorageError) -> [PostgresRow] {
        try fencedRun(statement) { statements, query in try statements.query(query) }
    }

    /// Runs the prepared `statement` as ``fenced(_:)`` runs a query (``Statements/query(prepared:within:)``).
    @discardableResult
    func fenced<Statement: PostgresPreparedStatement>(prepared statement: (_ store: String, _ epoch: Int64?) -> Statement) throws(StorageError)
        -> [Statement.Row] where Statement.Row: Sendable
    {
        try fencedRun(statement) { statements, prepared in try statements.query(prepared: prepared) }
    }

    /// Makes what `make` makes of the store and the lease's epoch, and runs it with `run`, refused as ``write(_:)`` is.
    private func fencedRun<Made, T>(_ make: (_ store: String, _ epoch: Int64?) -> Made, _ run: (Statements, Made) throws -> T) throws(StorageError) -> T {
        let fence = lease.fence, location = location
        let made = make(store.rawValue, try fence.epoch(path: location))
        return try session.run(.write) { statements in
            do {
                return try run(statements, made)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == PostgresFence.refusal {
                throw try fence.refused(statements, path: location) ?? error
            }
        }
    }

    /// Runs the statements of `body`, which only read, in one snapshot of the database.
    @discardableResult
    func read<T>(_ body: (Statements) throws -> T) throws(StorageError) -> T {
        try session.transaction(.read, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
    }

    // MARK: Ownership

    package var ownership: any StoreOwnership { lease }

    package var executor: (any TaskExecutor)? { pipelineExecutor }

    package func replaceInstance(with instance: String) throws -> String? {
        try write { statements in
            let rows = try statements.query("SELECT instance FROM restock_store WHERE store = \(store.rawValue) FOR UPDATE")
            let previous = try rows.first?.decode(String?.self) ?? nil
            try statements.execute("UPDATE restock_store SET instance = \(instance) WHERE store = \(store.rawValue)")
            return previous
        }
    }

    package func recordedInstance() throws -> String? {
        try read { statements in
            try statements.query("SELECT instance FROM restock_store WHERE store = \(store.rawValue)").first?.decode(String?.self) ?? nil
        }
    }

    /// Always true: there is no directory lock, the lease is all there is to hold.
    package var holdsLock: Bool { true }

    /// `true` at once: nothing but the lease to take (``holdsLock``).
    package func adoptTheLockWhenFree() async throws(StorageError) -> Bool { true }

    /// Closes the connection: the lease was released by ``PostgresLease/release()``, and nothing else holds the store. A
    /// call of a task of the ended run that comes later connects again.
    package func releaseDirectory() {
        session.disconnect()
        lease.disconnect()
    }

    /// The migration that ran when the storage was opened, if any (the service logs it).
    package var migrations: [SchemaVersion] {
        guard let schemaChange, schemaChange.from != schemaChange.to else { return [] }
        return [SchemaVersion(path: location, from: schemaChange.from, to: schemaChange.to)]
    }

    /// The schema's functions the database lacked and the opening made again, if any: said at warning level.
    package var openingWarnings: [String] {
        guard let restored = schemaChange?.restoredFunctions, !restored.isEmpty else { return [] }
        return [
            "\(location) lacked the function\(restored.count == 1 ? "" : "s") \(restored.joined(separator: ", ")) of its schema "
                + "(dropped by hand?): made again"
        ]
    }

    package var isRestored: Bool {
        get throws {
            try read { statements in
                let rows = try statements.query("SELECT restored IS NOT NULL FROM restock_store WHERE store = \(store.rawValue)")
                return try rows.first?.decode(Bool.self) ?? false
            }
        }
    }

    package func restoreReconciled() throws {
        try write { try $0.execute("UPDATE restock_store SET restored = NULL WHERE store = \(store.rawValue)") }
    }

    /// Vacuums the tables that held a forgotten customer's rows, so that PostgreSQL reuses their space (it cannot run in
    /// a transaction, and checks no lease: it changes no row).
    package func checkpoint() throws {
        try session.run(.write) { statements in
            try statements.execute("VACUUM restock_watch, restock_mirror, restock_outbox, restock_dead_letter, restock_journal")
        }
    }
}
