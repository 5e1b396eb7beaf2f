import Foundation
import PostgresNIO
import RestockPipeline

// Crash containment (SQLite's `DeadLetters` and `AttemptRecord`): the requests set aside, and the attempt being applied,
// in `restock_dead_letter` and `restock_attempt`. The attempt is a row written by a fenced statement, not a file
// written in place: it costs a round trip per batch where SQLite's costs a system call.
extension PostgresStoreStorage {
    /// Sets `request` aside, records it as processed and queues `error`, in one transaction.
    package func deadLetter(_ request: JournaledRequest, error: Publication, reason: String, at date: Date) throws -> CommittedPublication {
        let committed = place([error])[0]
        let store = store.rawValue
        try write { statements in
            try statements.execute(
                """
                INSERT INTO restock_dead_letter (store, seq, topic, payload, size, retained, failed_at, reason)
                VALUES (\(store), \(request.seq), \(request.topic), \(ByteBuffer(bytes: request.payload)), \(Int64(request.size)),
                    \(request.retained), \(date.timeIntervalSince1970), \(reason))
                ON CONFLICT (store, seq) DO UPDATE SET topic = excluded.topic, payload = excluded.payload, size = excluded.size,
                    retained = excluded.retained, failed_at = excluded.failed_at, reason = excluded.reason
                """)
            try PostgresOutbox(statements: statements, store: store).insert([committed])
            try PostgresStateWriter.setCounters(["processedThrough": request.seq], statements: statements, store: store)
        }
        return committed
    }

    package func deadLetterList() throws -> [DeadLetterList.Entry] {
        try read { statements in
            try statements.query(
                "SELECT seq, topic, payload, size, retained, failed_at, reason FROM restock_dead_letter WHERE store = \(store.rawValue) ORDER BY seq"
            ).map { row in
                let (seq, topic, payload, size, retained, failedAt, reason) = try row.decode(
                    (Int64, String, ByteBuffer, Int64, Bool, Double, String).self)
                let request = JournaledRequest(
                    seq: seq, topic: topic, payload: Array(payload.readableBytesView), size: Int(size), retained: retained)
                return DeadLetterList.Entry(request, reason: reason, failedAt: failedAt)
            }
        }
    }

    package func deadLetter(_ seq: Int64) throws -> JournaledRequest? {
        try read { statements in
            try statements.query(
                "SELECT seq, topic, payload, size, retained FROM restock_dead_letter WHERE store = \(store.rawValue) AND seq = \(seq)"
            ).first.map(Self.request(from:))
        }
    }

    // MARK: Attempts

    /// The attempt recorded last, as SQLite's `attempt` file reads: none when its places make no attempt.
    package func lastAttempt() throws -> (attempt: Attempt, faulted: Bool, kills: Int)? {
        try read { statements in
            let rows = try statements.query(
                "SELECT first, last, suspects_through, faulted, kills::int8 FROM restock_attempt WHERE store = \(store.rawValue)")
            guard let row = rows.first else { return nil }
            let (first, last, suspects, faulted, kills) = try row.decode((Int64, Int64, Int64, Bool, Int64).self)
            guard first >= 0, last >= 0, suspects >= 0, first <= last else { return nil }
            return (Attempt(first: first, last: last, suspectsThrough: suspects), faulted, Int(kills))
        }
    }

    /// Records that applying `attempt` begins, with no fault and `kills` earlier deaths (0 to 255, as the file's byte).
    /// Not waited for on the server's disk (`synchronous_commit` off for its transaction): it must outlive the store's
    /// process, not the server, as SQLite's `attempt` file is written without a sync.
    package func beginAttempt(_ attempt: Attempt, kills: Int) throws {
        let kills = Int64(UInt8(clamping: kills))
        try fenced(prepared: { store, epoch in
            AttemptBegin(store: store, epoch: epoch, first: attempt.first, last: attempt.last, suspectsThrough: attempt.suspectsThrough, kills: kills)
        })
    }

    /// Nothing to record: no fault can mark an attempt in the database after this process dies.
    package func endAttempt() {}

    /// Marks the attempt as failed; with none recorded, the mark alone reads as an attempt at place 0, as the file that
    /// holds only it does.
    package func failAttempt() {
        _ = try? fenced { store, epoch in
            """
            INSERT INTO restock_attempt (store, first, last, suspects_through, faulted, kills)
            SELECT \(store), 0, 0, 0, true, 0 WHERE restock_fence(\(store), \(epoch)) ON CONFLICT (store) DO UPDATE SET faulted = true
            """
        }
    }
}
