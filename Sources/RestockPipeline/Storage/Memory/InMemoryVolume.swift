import Foundation
import RestockCore
import Synchronization

/// Where a store's state lives in memory: what a data directory is to the SQLite backend. It outlives each storage
/// opened on it (``InMemoryStorageBackend``), so that a store stopped and started again in the same process finds its
/// state, and it holds the lease, so that two storages opened on it behave as two store processes on one data
/// directory: a second normal start is refused while the first has not let it go, and a takeover fences the older
/// owner's writes.
package final class InMemoryVolume: Sendable {
    /// What the volume holds, under its lock.
    struct Contents: Sendable {
        /// The store's state.
        var state = InMemoryState()
        /// The lease: its epoch (the fencing token, rising with every owner) and its holder's instance, empty once
        /// released at a clean stop (or never taken).
        var lease: (epoch: Int64, owner: String) = (0, "")
        /// The storages opened on the volume that have not let it go yet (``InMemoryStorage/releaseDirectory()``), by
        /// number: what the data directory's lock is to SQLite.
        var open: Set<Int> = []
        /// The number the next storage opened takes.
        var nextNumber = 0
        /// Standbys waiting for the volume to be let go (``waitUntilFree()``), by number.
        var standbys: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// How many reads of the outbox fail next, as a disk's I/O error would (``refuseOutboxReads(_:)``).
        var refusedOutboxReads = 0
        /// Whether writes of the request journal fail, as a disk's I/O error would (``refuseJournalWrites(_:)``).
        var refusesJournalWrites = false
        /// Whether renewals of the lease fail, as a database that is away refuses them (``refuseLeaseRenewals(_:)``).
        var refusesLeaseRenewals = false
        /// How many commits of the state next commit and then fail, their answer lost (``loseCommitAnswers(_:)``).
        var lostCommitAnswers = 0
    }

    /// The volume's name, as logs and errors say where the storage is.
    package let name: String
    private let contents = Mutex(Contents())
    /// What a call waits on while calls of its kind are held (``hold(_:_:)``): outside the contents' lock, as a database
    /// that does not answer holds the caller and nothing else.
    private let gates = Mutex<[HeldCall: DispatchSemaphore]>([:])

    /// An empty volume called `name` (by default a name of its own, `memory:` and a UUID).
    package init(name: String = "memory:\(UUID().uuidString)") { self.name = name }

    /// Runs `body` on the contents under the lock: one transaction.
    @discardableResult
    func withContents<T: Sendable, E: Error>(_ body: (inout Contents) throws(E) -> T) throws(E) -> T {
        try contents.withLock { (contents: inout sending Contents) throws(E) -> T in try body(&contents) }
    }

    /// Opens the volume for `store` as `claim` says, and takes the lease at the epoch after the last one (a takeover
    /// always takes it); returns the new storage's number, the epoch and the last place given to an outbox message.
    /// - Throws: ``RestockMQTTError/dataDirectoryInUse(_:)`` for a normal start while another storage has not let the
    ///   volume go; ``RestockMQTTError/dataDirectoryOfAnotherStore(_:owner:)`` when it holds another store's state.
    func open(for store: StoreID, claim: StorageClaim) throws(RestockMQTTError) -> (number: Int, epoch: Int64, lastOutboxPlace: Int64) {
        try withContents { (contents: inout Contents) throws(RestockMQTTError) in
            let instance: String
            switch claim {
            case .exclusive(let claimant):
                guard contents.open.isEmpty else { throw .dataDirectoryInUse(name) }
                instance = claimant
            case .takeover(let claimant, _): instance = claimant
            }
            if let owner = contents.state.store, owner != store { throw .dataDirectoryOfAnotherStore(name, owner: owner.rawValue) }
            contents.state.store = store
            contents.state.open()
            contents.lease = (contents.lease.epoch + 1, instance)
            let number = contents.nextNumber
            contents.nextNumber += 1
            contents.open.insert(number)
            return (number, contents.lease.epoch, contents.state.lastOutboxPlace)
        }
    }

    /// The storage numbered `number` lets the volume go: a normal start may open it now, once no other holds it.
    func close(_ number: Int) {
        let woken = withContents { contents -> [CheckedContinuation<Bool, Never>] in
            contents.open.remove(number)
            guard contents.open.isEmpty else { return [] }
            defer { contents.standbys = [:] }
            return Array(contents.standbys.values)
        }
        for standby in woken { standby.resume(returning: true) }
    }

    /// Waits until no storage holds the volume (its owner let it go: its run ended); `false` when cancelled first.
    func waitUntilFree() async -> Bool {
        let number = withContents { contents in
            defer { contents.nextNumber += 1 }
            return contents.nextNumber
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (standby: CheckedContinuation<Bool, Never>) in
                let resume: Bool? = withContents { contents in
                    if Task.isCancelled { return false }
                    if contents.open.isEmpty { return true }
                    contents.standbys[number] = standby
                    return nil
                }
                if let resume { standby.resume(returning: resume) }
            }
        } onCancel: {
            withContents { $0.standbys.removeValue(forKey: number) }?.resume(returning: false)
        }
    }

    /// Whether this read of the outbox fails: one of those ``refuseOutboxReads(_:)`` asked for, taken.
    func takeRefusedOutboxRead() -> Bool { takeOne(of: \.refusedOutboxReads) }

    /// Whether this commit of the state, made, fails all the same: one of those ``loseCommitAnswers(_:)`` asked for, taken.
    func takeLostCommitAnswer() -> Bool { takeOne(of: \.lostCommitAnswers) }

    /// Whether one of the faults `count` asks for is left, taken.
    private func takeOne(of count: WritableKeyPath<Contents, Int>) -> Bool {
        withContents { contents in
            guard contents[keyPath: count] > 0 else { return false }
            contents[keyPath: count] -= 1
            return true
        }
    }

    /// Whether writes of the request journal fail now (``refuseJournalWrites(_:)``).
    var refusesJournalWrites: Bool { withContents { $0.refusesJournalWrites } }

    // MARK: For tests

    /// From now on (`true`) or no more (`false`), writes of the request journal, and its probes, fail with an I/O error
    /// (retriable), as a disk or a database that is away refuses them.
    package func refuseJournalWrites(_ refuse: Bool) { withContents { $0.refusesJournalWrites = refuse } }

    /// From now on (`true`) or no more (`false`), renewals of the lease fail with an I/O error (retriable), as a database
    /// that is away refuses them.
    package func refuseLeaseRenewals(_ refuse: Bool) { withContents { $0.refusesLeaseRenewals = refuse } }

    /// The calls a test can hold (``hold(_:_:)``).
    package enum HeldCall: Sendable {
        /// Renewals of the lease.
        case leaseRenewals
        /// Writes of the request journal.
        case journalWrites
        /// Commits of the state.
        case commits
        /// Records of the broker's acknowledgements of what the outbox sent.
        case acknowledgements
    }

    /// From now on (`true`), each `call` waits, unanswered, until they are no more held (`false`), as it waits on a
    /// database that is frozen (SIGSTOP) or cut off without a reset.
    package func hold(_ call: HeldCall, _ hold: Bool) {
        let released = gates.withLock { gates in
            defer { gates[call] = hold ? (gates[call] ?? DispatchSemaphore(value: 0)) : nil }
            return hold ? nil : gates[call]
        }
        released?.signal()
    }

    /// Waits while `call`s are held (``hold(_:_:)``); at once when they are not.
    func waitWhileHeld(_ call: HeldCall) {
        guard let gate = gates.withLock({ $0[call] }) else { return }
        gate.wait()
        // Each call let through lets the next one through.
        gate.signal()
    }

    /// The next `count` commits of the state are made, and then fail with an I/O error (retriable), as a commit on
    /// PostgreSQL does whose answer is lost with its connection.
    package func loseCommitAnswers(_ count: Int) { withContents { $0.lostCommitAnswers = count } }

    /// The alert figures of the store's state, as `restock report` reads them.
    package func report(at now: Date) -> StoreReport { withContents { $0.state.report(at: now, sku: nil) } }

    /// The next `count` reads of the outbox fail with an I/O error (retriable), as a disk or a database that is away
    /// for a moment refuses them.
    package func refuseOutboxReads(_ count: Int) { withContents { $0.refusedOutboxReads = count } }

    /// The lease as the volume holds it now.
    package var lease: (epoch: Int64, owner: String) { withContents { $0.lease } }

    /// The store whose state the volume holds, if any.
    var owningStore: StoreID? { withContents { $0.state.store } }

    /// Whether a storage opened on the volume has not let it go yet.
    package var isInUse: Bool { withContents { !$0.open.isEmpty } }

    /// Marks the state as a restored copy (what `restock backup` makes of a data directory), used by no store yet.
    package func markRestored() {
        withContents { contents in
            contents.state.restored = true
            contents.state.instance = nil
        }
    }

    /// The state as a store would restore it, read while a store may run on the volume.
    package func snapshot() -> StoreSnapshot { withContents { $0.state.snapshot().snapshot } }

    /// How many requests wait in the journal, messages in the outbox, and watches in the state, read as ``snapshot()``.
    package func queueLengths() -> (inbox: Int, outbox: Int, watches: Int) {
        withContents { ($0.state.inboxLength, $0.state.messageCount, $0.state.watches.count) }
    }
}
