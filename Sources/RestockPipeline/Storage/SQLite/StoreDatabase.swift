import Foundation
import GRDB
import RestockCore
import Synchronization

/// The store's durable state in its data directory (docs/operations.md, "What the store has on disk"):
/// `store.sqlite` holds watches with their positions, inventory, the position and alert counters, how far the
/// request log has been applied, and the outbox of messages committed but not yet acknowledged by the broker;
/// `journal.sqlite` (``RequestLog``) holds the requests received but not yet applied.
///
/// The facade the pipeline uses, over focused types that each take a GRDB `DatabaseWriter` (or
/// `DatabaseReader`): ``DataDirectory`` (the lock, the paths, the connections), ``StateSchema`` (migrations),
/// ``StateReader`` (the snapshot), ``StateWriter`` (the commit), ``Outbox``, ``DeadLetters``, ``StoreMeta``,
/// ``PairCheck``, ``EarlierInbox``, and ``AttemptRecord`` (the `attempt` file). A lock on the directory keeps a
/// second store process out.
package final class StoreDatabase: StoreStorage {
    /// The data directory.
    package let directory: URL
    /// The write-ahead log of requests.
    package let log: RequestLog
    /// The thread the running store's SQLite work goes to — the pipeline's stages run there — off Swift's
    /// cooperative pool.
    package let pipelineExecutor = PipelineExecutor(label: "restock.pipeline")

    /// The pipeline's thread (``pipelineExecutor``): the SQLite writer's calls belong there.
    package var executor: (any TaskExecutor)? { pipelineExecutor }

    /// The lease (``lease``).
    package var ownership: any StoreOwnership { lease }

    /// The directory's `flock`; `nil` for a standby that took the lease over from a store that still holds it (frozen),
    /// until that process lets it go (``adoptLock(_:)``).
    private let lock: Mutex<DirectoryLock?>
    /// Who owns the directory (docs/architecture.md, "Ownership: the lease").
    package let lease: StoreLease
    /// The store's state.
    private let state: StorageFile
    private let reader: StateReader
    private let writer: StateWriter
    private let outbox: Outbox
    private let deadLetterTable: DeadLetters
    private let meta: StoreMeta
    /// The requests being applied.
    private let attempts: AttemptRecord
    /// Checkpoints the state off the pipeline's thread.
    private let checkpointer: StateCheckpointer
    /// The migrations that ran when the files were opened (the service logs them).
    package let migrations: [SchemaVersion]
    /// What the open found that the service says at start-up, at warning level.
    package let openingWarnings: [String]
    /// The last place journaled, and the last known synced to the disk (``syncJournal()``), recorded with each commit of
    /// the state (``PairCheck``).
    private let journalMarks: Mutex<(journaled: Int64, synced: Int64)>

    /// How a store process takes its data directory (docs/architecture.md, "Ownership: the lease").
    package enum Claim: Sendable {
        /// The directory's lock only, no lease (tools; tests of storage alone).
        case lockOnly
        /// A normal start of `instance`: the lock must be free now, and no other instance may have renewed the lease
        /// within its lifetime (by this machine's clock); then it takes the lease.
        case exclusive(instance: String)
        /// A standby of `instance` that judged the owner gone: with the lock it got (`nil`: the owner still holds it,
        /// frozen), and the lease as it saw it then, which must still be there (a compare-and-swap).
        case takeover(instance: String, lock: DirectoryLock?, seen: StoreLease.Holder?)
    }

    /// Opens (creating if need be) the database in `directory`, which belongs to one store: the first to
    /// open it with its id claims it.
    /// - Parameters:
    ///   - store: The store that opens it; `nil` to open it without checking or claiming (tools).
    ///   - claim: How it takes the directory: its lock, and the lease.
    ///   - now: This machine's clock, for the lease.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` when another store process holds its lock;
    ///   ``RestockMQTTError/dataDirectoryLeased(_:owner:)`` when another instance renews its lease;
    ///   a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` when another standby took it first;
    ///   ``RestockMQTTError/dataDirectoryOfAnotherStore(_:owner:)`` when it belongs to another store;
    ///   ``RestockMQTTError/dataDirectoryDamaged(file:problem:remedy:)`` when its two files are not two halves of one
    ///   store (``PairCheck``); a ``StorageError`` when a file cannot be used.
    package init(directory: URL, store: StoreID? = nil, claim: Claim = .lockOnly, now: Date = Date()) throws {
        let data = DataDirectory(directory)
        self.directory = directory
        switch claim {
        case .lockOnly, .exclusive: lock = Mutex(try data.claim())
        case .takeover(_, let held, _): lock = Mutex(held)
        }
        let pool = try data.openState()
        // Checkpoints are the checkpointer's, on a thread of its own (StateCheckpointer).
        try storageAccess(.write, data.statePath) { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") } }
        checkpointer = try StateCheckpointer(path: data.statePath)
        let (stateIsNew, migration) = try StateSchema.prepare(pool)
        let logPool = try data.openLog()
        let fence = LeaseFence()
        lease = StoreLease(state: pool, log: logPool, fence: fence)
        log = try RequestLog(logPool, fence: fence)
        // The lease before anything else is written; the log's epoch right after the state's.
        switch claim {
        case .lockOnly: break
        case .exclusive(let instance):
            let holder = try lease.holder()
            // A holder with the lock is gone: this process has it now. One without it took over from a frozen store.
            if !holder.holdsLock, holder.owner != instance, holder.isFresh(at: now, lifetime: StoreLease.lifetime) {
                throw RestockMQTTError.dataDirectoryLeased(directory.path, owner: holder.owner)
            }
            try lease.acquire(for: instance, seen: holder, holdsLock: true, at: now)
        case .takeover(let instance, let held, let seen):
            try lease.acquire(for: instance, seen: held == nil ? seen ?? lease.holder() : lease.holder(), holdsLock: held != nil, at: now)
        }
        state = StorageFile(pool)
        reader = StateReader(owning: pool)
        writer = StateWriter(pool, fence: fence)
        meta = StoreMeta(pool)
        deadLetterTable = DeadLetters(pool, fence: fence)
        migrations = [migration, log.migration].compactMap { $0 }
        attempts = try AttemptRecord(directory: directory)
        outbox = try Outbox(pool, fence: fence)
        if let store {
            let owner = try meta.recordOnce(.store, store.rawValue)
            guard owner == store.rawValue else { throw RestockMQTTError.dataDirectoryOfAnotherStore(directory.path, owner: owner ?? "?") }
        }
        let lost = try PairCheck(log: log, meta: meta, state: reader).run(stateIsNew: stateIsNew)
        openingWarnings = lost.map { lost in
            [
                "the request log ends at \(lost.lowerBound - 1), before requests \(lost.lowerBound) through \(lost.upperBound) the state had "
                    + "applied: a power cut took them before they were synced, so none was acknowledged, and the broker delivers them "
                    + "again (applied again: docs/contract.md, \"Durability and redelivery\")"
            ]
        } ?? []
        try EarlierInbox(pool).move(to: log, applied: reader.processedThrough())
        // What the log holds now is on the disk before any of it is counted synced: a killed process may have left its
        // last batch written and not synced.
        try log.sync()
        let logged = try log.lastPlace()
        journalMarks = Mutex((logged, logged))
    }

    /// Lets the directory go, so that a store made next — in this process too — opens it at once, while tasks of the
    /// ended run may still hold this (the files close when the last reference goes). Called when the store's run ends.
    package func releaseDirectory() {
        lock.withLock { $0 }?.release()
    }

    /// Whether this process holds the directory's lock (a standby that took over a frozen store does not, until that
    /// process ends).
    package var holdsLock: Bool { lock.withLock { $0 != nil } }

    /// Waits until the process this one took the lease over from — frozen, and still holding the directory's lock — lets
    /// the lock go (it ended), takes the lock, and notes in the lease that its holder has it: from then on a second
    /// start is refused by the lock, whatever its clock says, and a standby wakes the moment this process ends. Returns
    /// `false` when cancelled first.
    /// - Throws: a ``StorageError`` of kind ``StorageError/Kind/leaseLost`` when a newer owner holds the lease by then.
    package func adoptTheLockWhenFree() async throws(StorageError) -> Bool {
        guard !holdsLock else { return true }
        guard let taken = await DirectoryLock.wait(on: directory) else { return false }
        lock.withLock { $0 = taken }
        try lease.markLocked()
        return true
    }

    /// The store's state's file name in the data directory.
    package static let fileName = DataDirectory.stateFileName

    /// Limits the store's state to `pages` pages of its file from now on (`nil`: no limit), as a full disk would: a
    /// commit that needs more fails with `SQLITE_FULL`. For tests.
    package func limitSize(toPages pages: Int?) throws { try state.limitSize(toPages: pages) }

    /// How many pages the store's state holds now.
    package func pageCount() throws -> Int { try state.pageCount() }

    /// Whether a store process holds the directory's lock now.
    package static func isInUse(_ directory: URL) -> Bool { DataDirectory(directory).isInUse }

    /// Creates `directory` if need be and checks that a store can use it, taking nothing: what a standby does before it
    /// waits, so that a mistyped path or a directory it may not write fails at once, as a start does (found by an outside
    /// trial: a standby on a file, or on a directory it could not write, waited silently, and looked healthy).
    /// - Throws: a ``StorageError`` naming the path and why.
    package static func prepare(_ directory: URL) throws { try DataDirectory(directory).prepare() }

    /// ``prepare(_:)``, and when the directory already holds a store's state, checks that it is `store`'s, reading only:
    /// a standby of the wrong store fails at once, not when the live one ends (found by an outside trial: it waited, then
    /// refused exactly when it was needed).
    /// - Throws: ``RestockMQTTError/dataDirectoryOfAnotherStore(_:owner:)``; a ``StorageError`` naming the path and why.
    package static func prepare(_ directory: URL, for store: StoreID) throws {
        let data = DataDirectory(directory)
        try data.prepare()
        guard FileManager.default.fileExists(atPath: data.statePath) else { return }
        // A file that cannot be read this way (an older schema, damage) is left to the start, which migrates or refuses it.
        guard let owner = try? StoreMeta(data.openStateReadOnly()).value(of: .store) else { return }
        if owner != store.rawValue { throw RestockMQTTError.dataDirectoryOfAnotherStore(directory.path, owner: owner) }
    }

    /// Waits until no process holds the directory's lock, and takes it: the kernel wakes the wait (a blocking `flock` on
    /// a thread of its own), nothing polls. `nil` when cancelled first.
    package static func waitForLock(on directory: URL) async -> DirectoryLock? { await DirectoryLock.wait(on: directory) }

    /// Records `instance` as the store process now using the database; returns the one before it (a process
    /// that has stopped or died, since this one holds the lock).
    package func replaceInstance(with instance: String) throws -> String? { try meta.replace(.instance, with: instance) }

    package func recordedInstance() throws -> String? { try meta.value(of: .instance) }

    /// Marks the state as a copy made by `restock backup` (see ``isRestored``), used by no store process yet.
    func markRestored() throws {
        try meta.set(.restored, to: ISO8601DateFormatter().string(from: Date()))
        try meta.set(.instance, to: nil)
    }

    /// Whether the state is a copy made by `restock backup` that no store has made the broker agree with yet: it may
    /// be older than the broker's retained mirrors and inventory.
    package var isRestored: Bool { get throws { try meta.value(of: .restored) != nil } }

    /// The broker's retained state agrees with this state now: the mark of ``isRestored`` goes.
    package func restoreReconciled() throws { try meta.set(.restored, to: nil) }

    /// Reads the state saved in `directory` without taking the directory lock, while a store may be
    /// running on it (for tests and inspection; WAL readers never block the writer).
    package static func snapshot(readingOnly directory: URL) throws -> StoreSnapshot {
        try StateReader(DataDirectory(directory).openStateReadOnly()).snapshot().snapshot
    }

    /// The queue lengths of the database in `directory`, read as ``snapshot(readingOnly:)`` reads.
    package static func queueLengths(readingOnly directory: URL) throws -> (inbox: Int, outbox: Int, watches: Int) {
        try StateReader(DataDirectory(directory).openStateReadOnly()).queueLengths(log: RequestLog.readingOnly(directory))
    }

    // MARK: Restore

    /// Everything the store needs to carry on. Rows that do not hold a valid watch or inventory record (a file
    /// changed by hand, or damaged) are left out; ``loadSnapshotReportingSkipped()`` says which.
    package func loadSnapshot() throws -> StoreSnapshot { try reader.snapshot().snapshot }

    /// ``loadSnapshot()``, with a description of each row it left out.
    package func loadSnapshotReportingSkipped() throws -> (snapshot: StoreSnapshot, skipped: [String]) { try reader.snapshot() }

    /// Every customer the store has published a mirror for, watching something or not.
    package func mirroredCustomers() throws -> [CustomerID] { try reader.mirroredCustomers() }

    /// The on-hand quantity of every SKU the store has recorded, zeros included.
    package func inventory() throws -> [(SKU, Int)] { try reader.inventory() }

    /// The store's figures as of `now`, for `sku` or every SKU (docs/contract.md, "Reports").
    package func report(at now: Date, sku: SKU?) throws -> StoreReport { try reader.report(at: now, sku: sku) }

    /// The watches that have expired at `now`, soonest first, at most `limit` (``WatchTable/expired(at:limit:in:)``).
    package func expiredWatches(at now: Date, limit: Int) throws -> [WatchKey] { try reader.expiredWatches(at: now, limit: limit) }

    /// When the first watch expires after `now`; `nil` when none will.
    package func nextExpiry(after now: Date) throws -> Date? { try reader.nextExpiry(after: now) }

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
        journalMarks.withLock { $0.journaled = max($0.journaled, seq) }
        return JournaledRequest(seq: seq, topic: topic, payload: payload, size: size, retained: retained)
    }

    /// Records the requests of one read in the request log in one transaction, before any of them is acknowledged;
    /// returns them with their places, in order. All are recorded, or none (the error says why).
    package func journal(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws -> [JournaledRequest] {
        let places = try log.append(batch: requests)
        if let last = places.last { journalMarks.withLock { $0.journaled = max($0.journaled, last) } }
        return zip(places, requests).map { seq, request in
            JournaledRequest(seq: seq, topic: request.topic, payload: request.payload, size: request.size, retained: request.retained)
        }
    }

    /// Makes every request journaled so far survive a power cut (``RequestLog/sync()``).
    package func syncJournal() throws {
        let journaled = journalMarks.withLock { $0.journaled }
        try log.sync()
        journalMarks.withLock { $0.synced = max($0.synced, journaled) }
    }

    /// Forgets the requests of the log through `seq`.
    package func trimJournal(through seq: Int64) throws { try log.trim(through: seq) }

    /// Whether the request log can be written now (``RequestLog/probe()``).
    package func probeJournal() throws { try log.probe() }

    /// The place in the request log of the last request applied (or set aside); 0 before the first.
    package func processedThrough() throws -> Int64 { try reader.processedThrough() }

    /// The requests of the log not yet applied, oldest first, after `seq` (recovery).
    package func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        try log.requests(after: seq, limit: limit)
    }

    /// The requests being applied when the store last recorded it (``beginAttempt(_:kills:)``), and whether the
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
    package func deadLetter(_ request: JournaledRequest, error: Publication, reason: String = DeadLetterRecord.defaultReason, at date: Date) throws -> CommittedPublication {
        let committed = outbox.place([error])[0]
        try deadLetterTable.setAside(request, error: committed, reason: reason, at: date)
        return committed
    }

    /// The requests set aside, oldest first, as the admin's list shows them (docs/contract.md, "Dead letters").
    package func deadLetterList() throws -> [DeadLetterList.Entry] { try deadLetterTable.records().map(DeadLetterList.Entry.init) }

    /// The request set aside at `seq` (its place in the request log, the dead letter's id), if any.
    package func deadLetter(_ seq: Int64) throws -> JournaledRequest? { try deadLetterTable.record(seq)?.request }

    /// The requests set aside because applying them killed the store, oldest first.
    package func deadLetters() throws -> [JournaledRequest] { try deadLetterTable.all() }

    // MARK: Commit

    /// Applies a batch of changes in one transaction: watches, inventory, counters, the messages to
    /// publish, and how far the request log is applied. Returns the messages as committed, each with its place
    /// in the outbox, to be passed to the publisher in memory.
    @discardableResult
    package func commit(_ changes: StoreChanges) throws -> [CommittedPublication] {
        let committed = outbox.place(changes.publications)
        try writer.commit(changes, messages: committed, journalSynced: journalMarks.withLock { $0.synced })
        checkpointer.committed()
        return committed
    }

    /// Checkpoints both files' write-ahead logs into them and truncates the logs to nothing (after a customer is
    /// forgotten: the WAL keeps old page images until then).
    package func checkpoint() throws {
        try checkpointer.exclusively { () throws(StorageError) in try state.checkpoint() }
        try log.checkpoint()
    }

    // MARK: Outbox

    /// The last place in the outbox given to a message (0 before the first): messages committed later come after it.
    package var lastOutboxPlace: Int64 { outbox.lastPlaced }

    /// Messages committed but not yet acknowledged, oldest first, after `seq`.
    package func pendingPublications(after seq: Int64, limit: Int) throws -> [PendingPublication] {
        try outbox.pending(after: seq, limit: limit)
    }

    /// Records acknowledgements in one transaction: single messages are forgotten (by the version published:
    /// a newer one of a retained topic stays, under its own seq); a batch records how many
    /// of its alerts, from the first, are acknowledged, and is forgotten when that is all of them.
    package func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws {
        try outbox.acknowledge(messages: seqs, batches: batches)
        checkpointer.committed()
    }

    /// How many rows each queue holds (for tests and logs).
    package func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) { try reader.queueLengths(log: log) }

    /// Messages committed and not yet acknowledged by the broker.
    package func outboxDepth() throws -> Int { try reader.outboxDepth() }
}
