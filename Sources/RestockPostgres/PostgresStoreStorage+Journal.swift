import PostgresNIO
import RestockPipeline

// The request journal (SQLite's `RequestLog`): `restock_journal`, places given out per store from
// `restock_store.journal_place`, so that they rise by one and are never given twice, trimmed or not.
extension PostgresStoreStorage {
    /// Appends the requests of one read in one call, its own transaction, checked against the lease and committed before
    /// it answers: their places are taken from the store's row and the rows written from arrays (`unnest`), whatever
    /// their number (``JournalAppend``, prepared). Nothing for no request, as SQLite's log.
    ///
    /// An append that fails may have committed all the same (the server ended the session between its commit and its
    /// answer): its requests are refused, and the broker delivers them again. So the next append, or the probe before
    /// the journal resumes, first takes such rows out (``settleUnansweredAppend()``), and until then no read of the
    /// journal returns them: each request is journaled, and applied, once (found by an outside trial: 6 in 348 restarts
    /// of the server during bursts applied a stock change twice).
    package func journal(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws -> [JournaledRequest] {
        guard !requests.isEmpty else { return [] }
        try settleUnansweredAppend()
        let topics = requests.map(\.topic), payloads = requests.map { ByteBuffer(bytes: $0.payload) }
        let sizes = requests.map { Int64($0.size) }, retained = requests.map(\.retained)
        let answer: [Int64]
        do {
            answer = try fenced(prepared: { store, epoch in
                JournalAppend(store: store, epoch: epoch, topics: topics, payloads: payloads, sizes: sizes, retained: retained)
            })
        } catch {
            journalConfirmation.withLock { $0.unanswered = true }
            throw error
        }
        // The places the procedure gave: the row's place moved past them in SQL, so they fit; checked all the same, as
        // the procedure's answer is a number from outside.
        guard answer.count == 1, let before = answer.first, before >= 0, before <= Int64.max - Int64(requests.count) else {
            throw StorageError(.write, location, cause: JournalAppend.UnexpectedAnswer(rows: answer.count))
        }
        journalConfirmation.withLock { $0.place = before + Int64(requests.count) }
        journalMark.advance(to: before + Int64(requests.count))
        return requests.enumerated().map { offset, request in
            JournaledRequest(
                seq: before + 1 + Int64(offset), topic: request.topic, payload: request.payload, size: request.size, retained: request.retained)
        }
    }

    /// The requests journaled after `seq`, as far as this process knows the journal committed (``JournalConfirmation``).
    package func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        let confirmed = journalConfirmation.withLock { $0.place }
        return try read { statements in
            try statements.query(
                """
                SELECT seq, topic, payload, size, retained FROM restock_journal WHERE store = \(store.rawValue) AND seq > \(seq)
                    AND seq <= \(confirmed)
                ORDER BY seq LIMIT \(Self.bound(limit))
                """
            ).map(Self.request(from:))
        }
    }

    package func processedThrough() throws -> Int64 {
        try read { statements in try Self.processedThrough(statements, store: store.rawValue) }
    }

    /// The place of the last request applied, as `statements` read it; 0 before the first.
    static func processedThrough(_ statements: Statements, store: String) throws -> Int64 {
        let rows = try statements.query("SELECT value FROM restock_counter WHERE store = \(store) AND name = 'processedThrough'")
        return try rows.first?.decode(Int64.self) ?? 0
    }

    /// Nothing to do: each journal's commit has waited for the server's disk (`synchronous_commit`) before it returned.
    package func syncJournal() throws {}

    package func trimJournal(through seq: Int64) throws {
        try fenced { store, epoch in
            "DELETE FROM restock_journal WHERE store = \(store) AND seq <= \(seq) AND (SELECT restock_fence(\(store), \(epoch)))"
        }
    }

    /// Takes out of the journal, after an append that failed, the rows it may have committed unanswered: their
    /// requests were refused and come again from the broker. Their places are not given again (a standby's look may
    /// have seen them, and would take a server whose journal went back for one behind the store). In a transaction of
    /// its own, whose `COMMIT` answers after the commit; nothing to do after appends that all answered.
    func settleUnansweredAppend() throws {
        let (confirmed, unanswered) = journalConfirmation.withLock { ($0.place, $0.unanswered) }
        guard unanswered else { return }
        let removed = try write { statements in
            try statements.query("DELETE FROM restock_journal WHERE store = \(store.rawValue) AND seq > \(confirmed) RETURNING seq").count
        }
        journalConfirmation.withLock { $0.unanswered = false }
        if removed > 0 {
            session.logger.notice(
                "an append to the journal that failed had committed all the same: its \(removed) request\(removed == 1 ? "" : "s"), refused and delivered again by the broker, \(removed == 1 ? "is" : "are") taken out, so that none is applied twice")
        }
    }

    /// A write that changes nothing, checked against the lease: the database takes writes again. An append that failed
    /// is settled first (``settleUnansweredAppend()``).
    package func probeJournal() throws {
        try settleUnansweredAppend()
        try fenced { store, epoch in
            """
            UPDATE restock_store SET journal_place = journal_place WHERE store = \(store) AND (SELECT restock_fence(\(store), \(epoch)))
            """
        }
    }

    /// A request from a row of (seq, topic, payload, size, retained).
    static func request(from row: PostgresRow) throws -> JournaledRequest {
        let (seq, topic, payload, size, retained) = try row.decode((Int64, String, ByteBuffer, Int64, Bool).self)
        return JournaledRequest(seq: seq, topic: topic, payload: Array(payload.readableBytesView), size: Int(size), retained: retained)
    }

    /// A `LIMIT` as SQLite reads one: a negative limit sets no bound (`LIMIT NULL` in PostgreSQL).
    static func bound(_ limit: Int) -> Int64? { limit < 0 ? nil : Int64(limit) }
}

/// How far a store's journal is known, by this process, to have committed: the last place of its last append that
/// answered (or, at the opening, the journal's end); and whether an append since failed, and so may have committed
/// rows this process never counted (``PostgresStoreStorage/settleUnansweredAppend()``).
struct JournalConfirmation {
    var place: Int64
    var unanswered = false
}
