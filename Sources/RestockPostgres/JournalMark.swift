import Logging
import RestockCore
import RestockPipeline
import Synchronization

/// How far a store's journal goes, as the sessions of its storage (its statements', its lease's) and its standby's looks
/// saw it: a server that takes writes but holds less is not used. A former primary started again on its own after a
/// replica was promoted takes writes too, but lacks what the store committed on the promoted one: writing there would
/// lose it (found by outside trials: 2 acknowledged requests lost; a standby that took the lease there).
///
/// One per store and backend (``JournalMarks``), so that a standby's takeover keeps what its looks saw.
final class JournalMark: Sendable {
    /// The store whose journal it follows.
    let store: String
    private struct State {
        /// The furthest place a server, or this process's own journal, has shown it.
        var place: Int64?
        /// Whether a server, or this process's own journal, has shown it a place (not the broker's witness alone).
        var seenOnAServer: Bool { place != nil }
        /// The broker's witness as last read (``JournalWitness``): its place, and the topic it is retained on; kept apart,
        /// so that clearing it frees a standby that it held back (found by an outside trial: cleared, it still held a
        /// waiting standby back, which never took over).
        var witness: (place: Int64, topic: String)?
        /// How far the journal goes: the furthest of the two.
        var committed: Int64? {
            guard let witness else { return place }
            return max(place ?? witness.place, witness.place)
        }
        /// When each complaint was last logged: once a minute at most (an outside trial saw 3.5 a second while paused).
        var logged: [String: ContinuousClock.Instant] = [:]
    }
    private let state = Mutex(State())

    /// A mark of `store` with nothing seen yet.
    init(store: String) { self.store = store }

    /// The journal's last place committed or seen; `nil` before.
    var committed: Int64? { state.withLock { $0.committed } }

    /// Records that the store's journal holds `seq`.
    func advance(to seq: Int64) {
        state.withLock { $0.place = max($0.place ?? seq, seq) }
    }

    /// Records what the broker's witness, retained on `topic`, says now: the store's journal holds `seq`; `nil` when the
    /// broker retains none (cleared), which drops the witness read before.
    func witnessed(_ seq: Int64?, on topic: String) {
        state.withLock { $0.witness = seq.map { ($0, topic) } }
    }

    /// Whether every server of a list of `servers` that takes writes must be asked how far its journal goes before one
    /// is chosen: with nothing seen on a server yet and several servers (``furthest(of:place:name:location:logger:)``),
    /// the broker's witness or not — a witness may lag the journal by a round trip, or come from a broker restored to an
    /// older snapshot (found by an outside trial: with a witness, a start took the first server that held it, a former
    /// primary, over the promoted one). Otherwise the first that holds all ``committed`` is taken.
    func needsComparing(servers: Int) -> Bool { servers > 1 && !state.withLock { $0.seenOnAServer } }

    /// Whether a server that takes writes, its journal at `place`, may be used; when not, the reason, logged.
    func refusal(of server: String, place: Int64, logger: Logger) -> PostgresFailure.BehindTheStore? {
        let (committed, witness) = state.withLock { ($0.committed, $0.witness) }
        guard let committed, place < committed else { return nil }
        let behind = PostgresFailure.BehindTheStore(
            server: server, place: place, committed: committed, witnessTopic: witness.flatMap { $0.place == committed ? $0.topic : nil })
        if shouldLog("behind \(server)") { logger.error("\(behind.description) (said again once a minute)") }
        return behind
    }

    /// Of servers that take writes, the one whose journal goes furthest (the first of those that go as far); more than
    /// one is logged as the operator's mistake it is.
    func furthest<Server>(
        of writable: [Server], place: (Server) -> Int64, name: (Server) -> String, location: String, logger: Logger
    ) -> Server? {
        guard let chosen = writable.max(by: { place($0) < place($1) }) else { return nil }
        if writable.count > 1, shouldLog("several") {
            let others = writable.filter { name($0) != name(chosen) }.map { "\(name($0)) (through \(place($0)))" }
            logger.error(
                "more than one server of \(location) takes writes: the store uses \(name(chosen)), whose journal goes furthest (through \(place(chosen))), not \(others.joined(separator: ", ")); a former primary must follow the promoted server, not run on its own (docs/operations.md, \"Failover\"; said again once a minute)")
        }
        return chosen
    }

    private func shouldLog(_ what: String) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let last = state.logged[what], now - last < .seconds(60) { return false }
            state.logged[what] = now
            return true
        }
    }
}

/// The journal marks of a backend's stores (``JournalMark``), one per store: the standby's wait and the storage it then
/// opens share it.
final class JournalMarks: JournalWitness, Sendable {
    private let marks = Mutex<[String: JournalMark]>([:])

    /// The mark of `store`, made at the first call.
    func mark(of store: StoreID) -> JournalMark {
        marks.withLock { marks in
            if let mark = marks[store.rawValue] { return mark }
            let mark = JournalMark(store: store.rawValue)
            marks[store.rawValue] = mark
            return mark
        }
    }

    /// The broker's witness: the mark of `store` goes through `seq` at least; `nil`, none (a witness before is dropped).
    func witnessed(_ seq: Int64?, of store: StoreID, on topic: String) { mark(of: store).witnessed(seq, on: topic) }

    /// How far the mark of `store` goes.
    func place(of store: StoreID) -> Int64? { mark(of: store).committed }
}
