import PostgresNIO
import RestockPipeline

// The request journal (SQLite's `RequestLog`): `restock_journal`, places given out per store from
// `restock_store.journal_place`, so that they rise by one and are never given twice, trimmed or not.
extension PostgresStoreStorage {
    /// Appends the requests of one read in one call, its own transaction, checked against the lease and committed before
    /// it answers: their places are taken from the store's row and the rows written from arrays (`unnest`), whatever
    /// their number (``JournalAppend``, prepared). Nothing for no request, as SQLite's log.
    package func journal(batch requests: [(topic: String, payload: [UInt8], size: Int, retained: Bool)]) throws -> [JournaledRequest] {
        guard !requests.isEmpty else { return [] }
        let topics = requests.map(\.topic), payloads = requests.map { ByteBuffer(bytes: $0.payload) }
        let sizes = requests.map { Int64($0.size) }, retained = requests.map(\.retained)
        let answer = try fenced(prepared: { store, epoch in
            JournalAppend(store: store, epoch: epoch, topics: topics, payloads: payloads, sizes: sizes, retained: retained)
        })
        guard answer.count == 1, let before = answer.first else {
            throw StorageError(.write, location, cause: JournalAppend.UnexpectedAnswer(rows: answer.count))
        }
        journalMark.advance(to: before + Int64(requests.count))
        return requests.enumerated().map { offset, request in
            JournaledRequest(
                seq: before + 1 + Int64(offset), topic: request.topic, payload: request.payload, size: request.size, retained: request.retained)
        }
    }

    package func journaledRequests(after seq: Int64, limit: Int) throws -> [JournaledRequest] {
        try read { statements in
            try statements.query(
                """
                SELECT seq, topic, payload, size, retained FROM restock_journal WHERE store = \(store.rawValue) AND seq > \(seq)
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

    /// A write that changes nothing, checked against the lease: the database takes writes again.
    package func probeJournal() throws {
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
