import Foundation
import PostgresNIO
import RestockPipeline

/// The outbox of one store (SQLite's `Outbox`): messages committed but not yet acknowledged by the broker, in
/// `restock_outbox`, inside the transaction of the write that uses it.
struct PostgresOutbox {
    let statements: Statements
    let store: String

    /// Of `messages`, the last with each key, in their order: what writing them in turn would leave.
    static func lastOfEachKey(_ messages: [CommittedPublication]) -> [CommittedPublication] {
        var last: [String: Int] = [:]
        for (index, message) in messages.enumerated() { last[message.publication.key] = index }
        return last.values.sorted().map { messages[$0] }
    }

    /// Writes `messages` at their places. A retained topic keeps only its newest version waiting: a message replaces the
    /// row with its key (or its place), and of two with one key in the same batch the later one wins, as SQLite's
    /// `INSERT OR REPLACE` of the rows in turn leaves it. The store's highest place written rises with them.
    func insert(_ messages: [CommittedPublication]) throws {
        guard !messages.isEmpty else { return }
        let rows = Self.lastOfEachKey(messages)
        let publications = rows.map(\.publication)
        try statements.execute(
            """
            DELETE FROM restock_outbox WHERE store = \(store)
                AND (key = ANY(\(publications.map(\.key))::text[]) OR seq = ANY(\(rows.map(\.seq))::int8[]))
            """)
        try statements.execute(
            """
            INSERT INTO restock_outbox (store, seq, key, topic, payload, retain, batch, sent, sku)
            SELECT \(store), q, k, t, p, r, b, 0, CASE WHEN h THEN s END
            FROM unnest(\(rows.map(\.seq))::int8[], \(publications.map(\.key))::text[], \(publications.map(\.topic))::text[],
                \(publications.map { ByteBuffer(bytes: $0.payload) })::bytea[], \(publications.map(\.retain))::bool[],
                \(publications.map { Int64($0.alertCount) })::int8[], \(publications.map { $0.sku != nil })::bool[],
                \(publications.map { $0.sku ?? "" })::text[]) AS m(q, k, t, p, r, b, h, s)
            """)
        try statements.execute(
            "UPDATE restock_store SET outbox_place = GREATEST(outbox_place, \(rows.map(\.seq).max()!)) WHERE store = \(store)")
    }

    /// Messages committed but not yet acknowledged, oldest first, after `seq`, at most `limit` (none when negative).
    func pending(after seq: Int64, limit: Int) throws -> [PendingPublication] {
        try statements.query(
            """
            SELECT seq, topic, payload, retain, batch, sent FROM restock_outbox WHERE store = \(store) AND seq > \(seq)
            ORDER BY seq LIMIT \(PostgresStoreStorage.bound(limit))
            """
        ).map { row in
            let (seq, topic, payload, retain, batch, sent) = try row.decode((Int64, String, ByteBuffer, Bool, Int64, Int64).self)
            return PendingPublication(
                seq: seq, topic: topic, payload: Array(payload.readableBytesView), retain: retain, alertCount: Int(batch), sent: Int(sent))
        }
    }

    /// How many messages wait: a batch counts the alerts it still has to send.
    func messageCount() throws -> Int {
        let rows = try statements.query(
            "SELECT COALESCE(SUM(CASE WHEN batch > 0 THEN batch - sent ELSE 1 END), 0)::int8 FROM restock_outbox WHERE store = \(store)")
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }

    /// A message's row as the acknowledgements need it.
    struct Row {
        var batch: Int
        var sent: Int
        let sku: String?
    }

    /// The rows of the messages at `seqs` that acknowledgements change, by place: one statement, read before the
    /// acknowledgement's own (only this store's storage writes its outbox, one call at a time).
    func rows(at seqs: [Int64]) throws -> [Int64: Row] {
        var rows: [Int64: Row] = [:]
        for row in try statements.query("SELECT seq, batch, sent, sku FROM restock_outbox WHERE store = \(store) AND seq = ANY(\(seqs)::int8[])") {
            let (seq, batch, sent, sku) = try row.decode((Int64, Int64, Int64, String?).self)
            rows[seq] = Row(batch: Int(batch), sent: Int(sent), sku: sku)
        }
        return rows
    }

    /// Records acknowledgements: the alerts acknowledged count in the figures first (at `date`), then single messages are
    /// forgotten and each batch records how many of its alerts, from the first, are acknowledged — forgotten when that is
    /// all of them. The acknowledgements are applied to `rows` (``rows(at:)``) in order, as SQLite's statements in turn
    /// apply them; what changed is written by one call of `restock_acknowledge` (`restock_acknowledge_durably`, committed
    /// before it answers), fenced by the lease.
    static func acknowledgement(
        of seqs: [Int64], batches: [(seq: Int64, sent: Int)], rows: [Int64: Row], at date: Date, store: String, epoch: Int64?
    ) -> PostgresQuery {
        var rows = rows
        let counts = acknowledged(seqs, batches, in: rows).sorted { $0.key < $1.key }
        var removed: Set<Int64> = []
        var updated: [Int64: Int] = [:]
        for seq in seqs where rows.removeValue(forKey: seq) != nil { removed.insert(seq) }
        for batch in batches {
            guard let row = rows[batch.seq] else { continue }
            if row.batch > batch.sent {
                rows[batch.seq]?.sent = batch.sent
                updated[batch.seq] = batch.sent
            } else {
                rows[batch.seq] = nil
                updated[batch.seq] = nil
                removed.insert(batch.seq)
            }
        }
        let changed = updated.sorted { $0.key < $1.key }
        return """
            CALL restock_acknowledge_durably(\(store), \(epoch), \(counts.map(\.key))::text[], \(counts.map { Int64($0.value) })::int8[],
                \(PostgresAlertFigures.hour(of: date)), \(removed.sorted())::int8[], \(changed.map(\.key))::int8[],
                \(changed.map { Int64($0.value) })::int8[])
            """
    }

    /// How many alerts of each SKU the acknowledgements acknowledge newly, from the rows as they were before: each single
    /// alert once, and of each batch the alerts past those acknowledged before.
    private static func acknowledged(_ seqs: [Int64], _ batches: [(seq: Int64, sent: Int)], in rows: [Int64: Row]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for seq in Set(seqs) {
            guard let row = rows[seq], let sku = row.sku, row.batch == 0 else { continue }
            counts[sku, default: 0] += 1
        }
        for batch in batches {
            guard let row = rows[batch.seq], let sku = row.sku else { continue }
            let (newly, overflow) = batch.sent.subtractingReportingOverflow(row.sent)
            if newly > 0, !overflow { counts[sku, default: 0] += newly }
        }
        return counts
    }
}
