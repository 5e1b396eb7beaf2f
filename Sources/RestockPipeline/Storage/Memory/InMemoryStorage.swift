import Foundation
import RestockCore
import Synchronization

/// A store's storage in memory, opened on an ``InMemoryVolume`` by ``InMemoryStorageBackend``: the same answers as
/// the SQLite backend (``StoreDatabase``, the specification) for everything ``StoreStorage`` returns, without a disk —
/// for tests of the service, and anything that runs a store whose state need not outlive the process.
///
/// What differs, by nature: its calls block only where a test holds them (``InMemoryVolume/hold(_:_:)``), and run, as
/// SQLite's do, on a thread of their own (``executor``), off Swift's cooperative pool; the volume's lock is
/// the lease alone (``holdsLock`` is always true); nothing is migrated; a checkpoint has nothing to do; a fault that
/// kills the process takes the volume with it, so the attempt's fault mark is only set by ``failAttempt()``.
package final class InMemoryStorage: StoreStorage {
    /// Where the state lives, shared with the storages opened on it before and after this one.
    package let volume: InMemoryVolume
    /// The lease this storage took, which fences its writes.
    private let lease: InMemoryLease
    /// The storage's number on the volume, which it lets go of at the end of the store's run.
    private let number: Int
    /// The place the next outbox message takes: given out before the commit that writes it, as SQLite's ``Outbox`` does.
    private let nextOutboxPlace: Mutex<Int64>

    /// Opens `volume` for `store` as `claim` says (``InMemoryVolume/open(for:claim:)``).
    init(volume: InMemoryVolume, for store: StoreID, claim: StorageClaim) throws(RestockMQTTError) {
        let opened = try volume.open(for: store, claim: claim)
        self.volume = volume
        number = opened.number
        lease = InMemoryLease(volume: volume, epoch: opened.epoch)
        nextOutboxPlace = Mutex(opened.lastOutboxPlace + 1)
    }

    deinit { volume.close(number) }

    /// Reads the state under the volume's lock.
    private func read<T: Sendable>(_ body: (InMemoryState) -> T) -> T { volume.withContents { body($0.state) } }

    /// Changes the state under the volume's lock, if this storage still holds the lease.
    private func write<T: Sendable>(_ body: (inout InMemoryState) throws(StorageError) -> T) throws(StorageError) -> T {
        try lease.write { (contents: inout InMemoryVolume.Contents) throws(StorageError) -> T in try body(&contents.state) }
    }

    // MARK: Ownership

    package var ownership: any StoreOwnership { lease }

    /// A thread of its own, as SQLite's: a call a test holds (a commit) must not hold a thread of the cooperative pool,
    /// whose two threads on a machine of two cores are all the tests have (two held at once hung the tests).
    private let pipelineExecutor = PipelineExecutor(label: "restock.memory")

    package var executor: (any TaskExecutor)? { pipelineExecutor }

    package func replaceInstance(with instance: String) throws -> String? {
        volume.withContents { contents in
            defer { contents.state.instance = instance }
            return contents.state.instance
        }
    }

    package func recordedInstance() throws -> String? { volume.withContents { $0.state.instance } }

    /// Always true: the lease is all there is to hold.
    package var holdsLock: Bool { true }

    package func adoptTheLockWhenFree() async throws(StorageError) -> Bool { true }

    /// Lets the volume go: a normal start may open it now (deinit does it too, as a closed file lets a lock go).
    package func releaseDirectory() { volume.close(number) }

    /// None: nothing to migrate in memory.
    package var migrations: [SchemaVersion] { [] }

    // MARK: The request journal

    package func journal(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws -> [JournaledRequest] {
        // Nothing to write for no request: SQLite's log writes nothing then, and refuses nothing.
        guard !requests.isEmpty else { return [] }
        volume.waitWhileHeld(.journalWrites)
        try refuseWhenAsked()
        return try write { $0.journal(requests) }
    }

    package func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        read { $0.journal.elements(after: seq, limit: limit) }
    }

    package func processedThrough() throws -> Int64 { read(\.processedThrough) }

    /// Nothing to do: the journal lives as long as the process.
    package func syncJournal() throws {}

    package func trimJournal(through seq: Int64) throws { try write { $0.trimJournal(through: seq) } }

    package func probeJournal() throws {
        try refuseWhenAsked()
        try write { _ in }
    }

    /// Fails as a disk's I/O error would while the volume is asked to refuse journal writes (``InMemoryVolume/refuseJournalWrites(_:)``).
    private func refuseWhenAsked() throws(StorageError) {
        if volume.refusesJournalWrites { throw StorageError.system(.write, volume.name, errno: EIO) }
    }

    // MARK: The state

    package func loadSnapshotReportingSkipped() throws -> (snapshot: StoreSnapshot, skipped: [String]) { read { $0.snapshot() } }

    @discardableResult
    package func commit(_ changes: StoreChanges) throws -> [CommittedPublication] {
        volume.waitWhileHeld(.commits)
        let committed = place(changes.publications)
        try write { (state: inout InMemoryState) throws(StorageError) in
            do {
                try state.commit(changes, messages: committed)
            } catch {
                throw StorageError(.write, volume.name, cause: error)
            }
        }
        if volume.takeLostCommitAnswer() { throw StorageError.system(.write, volume.name, errno: EIO) }
        return committed
    }

    /// Gives `publications` their places in the outbox, in order (``Outbox/place(_:)``).
    private func place(_ publications: [Publication]) -> [CommittedPublication] {
        let first = nextOutboxPlace.withLock { next in
            defer { next += Int64(publications.count) }
            return next
        }
        return publications.enumerated().map { CommittedPublication(seq: first + Int64($0.offset), publication: $0.element) }
    }

    package func mirroredCustomers() throws -> [CustomerID] { read { $0.mirrors.sorted() } }

    /// As SQLite's: a quantity out of the contract's range is left out, as the snapshot leaves it out.
    package func inventory() throws -> [(SKU, Int)] {
        read { $0.inventory.filter { RequestLimits.stockSet.contains($0.value) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    package var isRestored: Bool { get throws { read(\.restored) } }

    package func restoreReconciled() throws { volume.withContents { $0.state.restored = false } }

    /// Nothing to do: no log to fold, and what is forgotten is gone.
    package func checkpoint() throws {}

    // MARK: Crash containment

    /// The attempt recorded last, as ``AttemptRecord/read()`` reads it: none when its places make no attempt.
    package func lastAttempt() throws -> (attempt: Attempt, faulted: Bool, kills: Int)? {
        read { state in
            guard let recorded = state.attempt else { return nil }
            let attempt = recorded.attempt
            guard attempt.first >= 0, attempt.last >= 0, attempt.suspectsThrough >= 0, attempt.first <= attempt.last else { return nil }
            return recorded
        }
    }

    package func beginAttempt(_ attempt: Attempt, kills: Int) throws {
        volume.withContents { $0.state.attempt = (attempt, false, Int(UInt8(clamping: kills))) }
    }

    /// Nothing to record: the fault mark is disarmed, and no fault can set it in memory.
    package func endAttempt() {}

    /// Marks the attempt as failed; with none recorded, the mark alone reads as an attempt at place 0, as the `attempt`
    /// file that holds only it does.
    package func failAttempt() {
        volume.withContents { contents in
            let attempt = contents.state.attempt
            contents.state.attempt = (attempt?.attempt ?? Attempt(first: 0, last: 0, suspectsThrough: 0), true, attempt?.kills ?? 0)
        }
    }

    // MARK: The outbox

    package var lastOutboxPlace: Int64 { nextOutboxPlace.withLock { $0 - 1 } }

    package func pendingPublications(after seq: Int64, limit: Int) throws -> [PendingPublication] {
        if volume.takeRefusedOutboxRead() { throw StorageError.system(.read, volume.name, errno: EIO) }
        return read { $0.outbox.entries(after: seq, limit: limit).map { $0.element.pending(at: $0.place) } }
    }

    package func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws {
        guard !seqs.isEmpty || !batches.isEmpty else { return }
        volume.waitWhileHeld(.acknowledgements)
        try write { $0.acknowledge(messages: seqs, batches: batches, at: Date()) }
    }

    package func outboxDepth() throws -> Int { read(\.messageCount) }

    package func queueLengths() throws -> (inbox: Int, outbox: Int, watches: Int) { volume.queueLengths() }

    // MARK: Reports, expiry, dead letters

    package func report(at now: Date, sku: SKU?) throws -> StoreReport { read { $0.report(at: now, sku: sku) } }

    package func expiredWatches(at now: Date, limit: Int) throws -> [WatchKey] { read { $0.expiredWatches(at: now, limit: limit) } }

    package func nextExpiry(after now: Date) throws -> Date? { read { $0.nextExpiry(after: now) } }

    package func deadLetter(_ request: JournaledRequest, error: Publication, reason: String, at date: Date) throws -> CommittedPublication {
        let committed = place([error])[0]
        try write { $0.setAside(request, error: committed, reason: reason, at: date) }
        return committed
    }

    package func deadLetterList() throws -> [DeadLetterList.Entry] {
        read { $0.deadLetters.elements.map { DeadLetterList.Entry($0.request, reason: $0.reason, failedAt: $0.failedAt) } }
    }

    package func deadLetter(_ seq: Int64) throws -> JournaledRequest? { read { $0.deadLetters[seq]?.request } }
}
