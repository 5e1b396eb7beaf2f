/// The check, at every start, that the data directory's two files are the two halves of one store: the store's
/// state (`store.sqlite`) and the request log (`journal.sqlite`).
///
/// It refuses a pair of which one was deleted, emptied or replaced by an older copy, rather than start on it and
/// lose, or apply again, what the missing part held (docs/contract.md, "Durability and redelivery";
/// docs/operations.md, "A data directory whose files do not belong together"): the store never starts with less than the log and the state
/// together hold.
struct PairCheck {
    /// The request log.
    let log: RequestLog
    /// What the state records about itself: the identity of the log it was written with.
    let meta: StoreMeta
    /// The state.
    let state: StateReader

    /// What every refusal tells the operator to do.
    static let remedy = "restore both files from one backup, or remove both to start an empty store"

    /// Checks the pair; at the first open of a pair, records the log's identity in the state.
    ///
    /// The network thread hands requests on to be applied while their batch is being synced, and acknowledges them once
    /// it is (docs/architecture.md, "The request log"): a power cut in between may leave the state with requests the
    /// log lost. A log that ends before the state's `processedThrough`, but not before the place the state knew synced
    /// (``CounterRecord/Name/journalSyncedThrough``), lost only requests never acknowledged: the broker delivers them
    /// again. Those places are returned, and the log gives out places after them.
    /// - Parameter stateIsNew: Whether the state held none of the store's tables when it was opened (new, or emptied).
    /// - Returns: The places the state applied that a power cut took from the log before they were synced, if any.
    /// - Throws: ``RestockMQTTError/dataDirectoryDamaged(file:problem:remedy:)`` naming the file that cannot be
    ///   the other's half; a ``StorageError`` when a file cannot be read or written.
    @discardableResult
    func run(stateIsNew: Bool) throws -> ClosedRange<Int64>? {
        let logged = try log.lastPlace()
        let applied = try state.processedThrough()
        let synced = try state.journalSyncedThrough()
        let state = state.path, journal = log.path
        if stateIsNew, logged > 0 {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: state,
                problem: "the store's state \(state) is missing, empty or new, but the request log \(journal) beside it has given out "
                    + "places up to \(logged): the watches and stock those requests made would be lost",
                remedy: Self.remedy)
        }
        // The log the state was written with: recorded at the first open of the pair, checked at every other.
        let identity = try log.identity()
        if try meta.recordOnce(.log, identity) != identity {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: journal,
                problem: "the request log \(journal) is not the one the store's state \(state) was written with (deleted, emptied or "
                    + "replaced): acknowledged requests it held may be lost",
                remedy: Self.remedy)
        }
        var lostUnsynced: ClosedRange<Int64>?
        if applied > logged, let synced, logged >= synced {
            lostUnsynced = (logged + 1)...applied
        } else if applied > logged {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: journal,
                problem: "the request log \(journal) is older than the store's state \(state) (requests up to \(applied) applied, "
                    + "the log ends at \(logged)): requests acknowledged since may be lost",
                remedy: Self.remedy)
        }
        // The log forgets requests once the state has them: a state that has not applied all it forgot is older than
        // the log (a copy from before, or store.sqlite copied without its -wal), and the requests in between are gone.
        let forgotten = try log.forgottenThrough()
        if applied < forgotten {
            throw RestockMQTTError.dataDirectoryDamaged(
                file: state,
                problem: "the store's state \(state) is older than its request log \(journal): it has applied requests up to \(applied), "
                    + "but the log has already forgotten those up to \(forgotten), so the ones in between would be lost",
                remedy: Self.remedy)
        }
        return lostUnsynced
    }
}
