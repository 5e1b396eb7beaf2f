import Synchronization

/// How far a store's journal goes, as the sessions of its storage saw it committed: a server that holds less is not
/// connected to (``PostgresSession``). A former primary started again on its own after a replica was promoted takes
/// writes too, but lacks what the store committed on the promoted one: writing there would lose it (found by an outside
/// trial: 2 acknowledged requests lost). Shared by the storage's sessions (its statements', its lease's), so that the
/// lease is not renewed on a server the journal would not be written to.
final class JournalMark: Sendable {
    /// The store whose journal it follows.
    let store: String
    private let place = Mutex<Int64?>(nil)

    /// A mark of `store` with nothing seen yet.
    init(store: String) { self.store = store }

    /// The journal's last place committed, or found at the storage's first connection; `nil` before.
    var committed: Int64? { place.withLock { $0 } }

    /// Records that the store's journal holds `seq`.
    func advance(to seq: Int64) {
        place.withLock { $0 = max($0 ?? seq, seq) }
    }
}
