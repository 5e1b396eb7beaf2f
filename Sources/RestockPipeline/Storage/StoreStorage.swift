import Foundation
import Logging
import RestockCore

/// Where a store keeps what it must not lose, and who owns it: the one seam between the running store and its storage
/// (docs/architecture.md, "The seams"). The service and the pipeline talk to this, never to a backend's own types.
///
/// - **Ownership**: the lease (``ownership``), taken when the storage is opened (``StoreStorageBackend``), renewed,
///   checked and released; every write below is fenced by its epoch and refused as
///   ``StorageError/Kind/leaseLost`` once a newer owner holds it.
/// - **The request journal**: a batch appended before the broker's acknowledgements are written, read after a place,
///   trimmed once applied.
/// - **The state**: a snapshot loaded at the start; a batch of changes committed with its outbox messages and how far
///   the journal is applied, in one transaction.
/// - **The outbox**: what was committed and not yet acknowledged by the broker.
/// - **Reports, expiry, dead letters, attempts** (crash containment) and **checkpoints** (after a forget).
///
/// Its calls block (a local file, or a database server): run them where ``withExecutor(_:)`` says, never on Swift's
/// cooperative pool. Three backends: SQLite in the data directory (`Storage/SQLite/`, the default), PostgreSQL
/// (`RestockPostgres`) and memory (`Storage/Memory/`, for tests of the service that need no disk).
package protocol StoreStorage: AnyObject, Sendable {
    // MARK: Ownership

    /// The lease this process took when it opened the storage.
    var ownership: any StoreOwnership { get }

    /// Where the storage's blocking calls belong: a thread of its own (SQLite's writer), or `nil` for anywhere.
    var executor: (any TaskExecutor)? { get }

    /// Records `instance` as the store process using the storage now; returns the one before it.
    func replaceInstance(with instance: String) throws -> String?

    /// The store process recorded as using the storage (``replaceInstance(with:)``), read without changing it.
    func recordedInstance() throws -> String?

    /// Whether this process holds everything ownership needs: for SQLite, the data directory's lock too (a standby
    /// that took over a frozen store does not, until that process ends).
    var holdsLock: Bool { get }

    /// Waits until what keeps this process from holding ``holdsLock`` is gone (the frozen process it took over from
    /// ended), and takes it. `false` when cancelled first.
    func adoptTheLockWhenFree() async throws(StorageError) -> Bool

    /// Lets the storage go at the end of the store's run, so that a store made next — in this process too — opens it.
    func releaseDirectory()

    /// The schema migrations that ran when the storage was opened (the service logs them).
    var migrations: [SchemaVersion] { get }

    /// What opening the storage found that the service says at start-up, at warning level (none by default).
    var openingWarnings: [String] { get }

    // MARK: The request journal

    /// Records the requests of one read in one transaction, before any of them is acknowledged to the broker; returns
    /// them with their places, in order. All are recorded, or none. They survive the process at once, and a power cut
    /// once ``syncJournal()`` has returned.
    func journal(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws -> [JournaledRequest]

    /// Makes every request journaled so far survive a power cut; nothing to do where each journal's commit already
    /// waits for the disk.
    func syncJournal() throws

    /// The requests journaled after place `seq`, oldest first, at most `limit`.
    func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest]

    /// The place of the last request applied (or set aside); 0 before the first.
    func processedThrough() throws -> Int64

    /// Forgets the journaled requests through place `seq` (applied, and committed).
    func trimJournal(through seq: Int64) throws

    /// Whether the journal can be written now: a write that changes nothing (after a pause, before the session is made
    /// again).
    func probeJournal() throws

    // MARK: The state

    /// Everything the store needs to carry on, with a description of each record left out as invalid.
    func loadSnapshotReportingSkipped() throws -> (snapshot: StoreSnapshot, skipped: [String])

    /// Commits a batch of changes in one transaction — watches, inventory, counters, the messages to publish, how far
    /// the journal is applied — and returns the messages as committed, each with its place in the outbox.
    @discardableResult
    func commit(_ changes: StoreChanges) throws -> [CommittedPublication]

    /// Every customer the store has published a mirror for.
    func mirroredCustomers() throws -> [CustomerID]

    /// The on-hand quantity of every SKU recorded, zeros included.
    func inventory() throws -> [(SKU, Int)]

    /// Whether the state is a restored copy no store has made the broker agree with yet.
    var isRestored: Bool { get throws }

    /// The broker's retained state agrees with this state now.
    func restoreReconciled() throws

    /// Writes what the storage keeps in logs into its files, and drops what it no longer needs (after a forget: the
    /// customer's data must not linger).
    func checkpoint() throws

    // MARK: Crash containment

    /// The requests being applied when the store last recorded it, whether the process died of a fault meanwhile, and
    /// how often it died without one while applying the attempt's one request alone.
    func lastAttempt() throws -> (attempt: Attempt, faulted: Bool, kills: Int)?

    /// Records that applying `attempt` begins.
    func beginAttempt(_ attempt: Attempt, kills: Int) throws

    /// The attempt begun last is over.
    func endAttempt()

    /// The attempt begun last failed with an error.
    func failAttempt()

    // MARK: The outbox

    /// The last place given to an outbox message (0 before the first).
    var lastOutboxPlace: Int64 { get }

    /// Messages committed and not acknowledged, oldest first, after place `seq`, at most `limit`.
    func pendingPublications(after seq: Int64, limit: Int) throws -> [PendingPublication]

    /// Records acknowledgements in one transaction: messages forgotten; of each alert batch, how many from the first.
    func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws

    /// Messages committed and not yet acknowledged.
    func outboxDepth() throws -> Int

    /// How many requests wait in the journal, messages in the outbox, and watches in the state.
    func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int)

    // MARK: Reports, expiry, dead letters

    /// The store's figures as of `now`, for `sku` or every SKU (docs/contract.md, "Reports").
    func report(at now: Date, sku: SKU?) throws -> StoreReport

    /// The watches expired at `now`, soonest first, at most `limit`.
    func expiredWatches(at now: Date, limit: Int) throws -> [WatchKey]

    /// When the first watch expires after `now`; `nil` when none will.
    func nextExpiry(after now: Date) throws -> Date?

    /// Sets `request` aside as a dead letter, records it as processed and queues `error` for its sender, in one
    /// transaction; returns the error as committed.
    func deadLetter(_ request: JournaledRequest, error: Publication, reason: String, at date: Date) throws -> CommittedPublication

    /// The requests set aside, oldest first, as the admin's list shows them.
    func deadLetterList() throws -> [DeadLetterList.Entry]

    /// The request set aside at place `seq`, if any.
    func deadLetter(_ seq: Int64) throws -> JournaledRequest?
}

extension StoreStorage {
    package var openingWarnings: [String] { [] }

    /// Whether the last run stopped (died, or was killed) while it applied requests: an attempt begun and not ended
    /// (``beginAttempt(_:kills:)``) holds requests not yet applied.
    package func stoppedWhileApplying() throws -> Bool {
        guard let (attempt, _, _) = try lastAttempt() else { return false }
        return attempt.last > (try processedThrough())
    }

    /// Runs `operation` where the storage's blocking calls belong (``executor``).
    package func withExecutor<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ operation: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await withTaskExecutorPreference(executor, isolation: isolation, operation: operation)
    }
}

/// Who owns a store's storage: a lease with an epoch that rises with every new owner (docs/architecture.md, "Ownership:
/// the lease"). Taken when the storage is opened; every write of the storage is fenced by it.
package protocol StoreOwnership: Sendable {
    /// The epoch this process holds, the one its writes are fenced by; `nil` before it took the lease.
    var heldEpoch: Int64? { get }

    /// Renews the lease at `now`, if this process still holds it.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it.
    func renew(at now: Date) throws(StorageError)

    /// Whether this process still holds the lease, read from the storage.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` once a newer owner holds it.
    func check() throws(StorageError)

    /// Lets the lease go at a clean stop.
    func release()
}

/// Opens a store's storage: where it lives (a data directory, a database) and how ownership is taken there, by a normal
/// start or by a standby that waited for the owner to go.
package protocol StoreStorageBackend: Sendable {
    /// Where the storage is, for logs: a path, or a database's name.
    var location: String { get }

    /// What keeps the state, as `restock_storage_info`'s `engine` label names it: `sqlite`, `postgresql`, `memory`.
    var engine: String { get }

    /// How far each store's journal goes as the broker witnessed it, where the backend's servers can be replaced under
    /// the store (``JournalWitness``: PostgreSQL); `nil` where the state is the store's own (SQLite, memory).
    var journalWitness: (any JournalWitness)? { get }

    /// Opens the storage of `store`, taking it as `claim` says (a normal start, or a standby's takeover).
    /// - Throws: ``RestockMQTTError`` when another process owns it or it belongs to another store; a ``StorageError``.
    func open(for store: StoreID, claim: StorageClaim, now: Date) throws -> any StoreStorage

    /// Refuses at once, before a standby of `store` starts waiting, a storage no store could use or that belongs to
    /// another store: a standby never waits for ever on it.
    func prepareStandby(for store: StoreID) throws

    /// Waits, touching nothing the owner writes, until the owner of `store` has gone — its end freed what it held
    /// (``StandbyTakeover/hold``), or it released the lease, or left it unrenewed for its lifetime (frozen, cut off) —
    /// and returns what this standby saw, to take the storage with (``StorageClaim/takeover(instance:_:)``).
    /// What it does meanwhile beside waiting (SQLite: ending an owner frozen while holding a lock of its files) it says
    /// in `logger`.
    /// - Throws: `CancellationError` when cancelled first.
    func waitForTheOwnerToGo(of store: StoreID, logger: Logger) async throws -> StandbyTakeover
}

extension StoreStorageBackend {
    /// ``waitForTheOwnerToGo(of:logger:)``, saying nothing.
    package func waitForTheOwnerToGo(of store: StoreID) async throws -> StandbyTakeover {
        try await waitForTheOwnerToGo(of: store, logger: Logger(label: "restock.standby", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

/// How a store process takes its storage (docs/architecture.md, "Ownership: the lease").
package enum StorageClaim: Sendable {
    /// A normal start of `instance`: nobody else may hold it or have renewed its lease within the lease's lifetime.
    case exclusive(instance: String)
    /// A standby of `instance` that judged the owner gone, with what it saw then (a compare-and-swap: another standby
    /// may have been quicker).
    case takeover(instance: String, StandbyTakeover)
}

/// What a standby judged the owner gone by: what the owner's end handed it, if anything, and the lease as it saw it.
package struct StandbyTakeover: Sendable {
    /// What the owner held until its end, which the standby holds now (SQLite: the data directory's lock); `nil` when
    /// the owner is judged gone by its lease alone, maybe still alive but frozen or cut off.
    package let hold: (any OwnershipHold)?
    /// The lease as the standby last saw it: it must still be so when the standby takes it.
    package let seen: LeaseHolder?

    package init(hold: (any OwnershipHold)?, seen: LeaseHolder?) {
        self.hold = hold
        self.seen = seen
    }

    /// Whether the owner's process ended (it let go of what it held), rather than going quiet.
    package var ownerEnded: Bool { hold != nil }
}

/// Something only the owner of a store's storage holds while its process lives, which the operating system or the
/// database frees when it ends (SQLite: the data directory's `flock`).
package protocol OwnershipHold: AnyObject, Sendable {
    /// Lets it go.
    func release()
}
