import Foundation
import GRDB
import Synchronization

/// The outbox of the store's state: messages committed but not yet acknowledged by the broker, oldest first.
///
/// A message is written in the transaction that made it (``StateWriter``, ``DeadLetters``) at a place given out
/// here beforehand, so that the commit can pass each message on in memory with its place. The broker's
/// acknowledgements remove them.
final class Outbox: Sendable {
    private let file: StorageFile
    /// The place the next message takes.
    private let nextSeq: Mutex<Int64>

    /// The outbox of the store's state in `writer`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    init(_ writer: any DatabaseWriter, path: String? = nil, fence: LeaseFence? = nil) throws(StorageError) {
        file = StorageFile(writer, path: path, fence: fence.map { ($0, .state) })
        nextSeq = Mutex(
            try file.read { db in
                // Past every place given out before, also to messages since acknowledged.
                let used = try Int64.fetchOne(
                    db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [OutboxRecord.databaseTableName])
                let highest = try OutboxRecord.select(max(OutboxRecord.Columns.seq), as: Int64.self).fetchOne(db)
                return max(used ?? 0, highest ?? 0) + 1
            })
    }

    /// The last place given out (0 before the first).
    var lastPlaced: Int64 { nextSeq.withLock { $0 - 1 } }

    /// Gives `publications` their places in the outbox, in order: the places their commit writes them at.
    func place(_ publications: [Publication]) -> [CommittedPublication] {
        let first = nextSeq.withLock { next in
            defer { next += Int64(publications.count) }
            return next
        }
        return publications.enumerated().map { CommittedPublication(seq: first + Int64($0.offset), publication: $0.element) }
    }

    /// Writes `messages` at their places, in the transaction of `db`. A retained topic keeps only its newest version
    /// waiting: its key is unique, and a newer version replaces the row (at the newer place); rows of one statement
    /// are written in order, so a later version in the same commit wins.
    ///
    /// Many rows to a statement (``BulkStatement``), not one record at a time: a commit may queue thousands of
    /// messages (a mirror per customer, or every retained topic again), and 20,000 took about 4 times as long so.
    static func insert(_ messages: [CommittedPublication], in db: Database) throws {
        try bulkInsert.insert(messages.map(OutboxRecord.init), in: db)
    }

    private static let bulkInsert = BulkStatement(inserting: OutboxRecord.self, orElse: .replace)

    /// Messages committed but not yet acknowledged, oldest first, after `seq`.
    func pending(after seq: Int64, limit: Int) throws(StorageError) -> [PendingPublication] {
        try file.read { db in
            try OutboxRecord.filter(OutboxRecord.Columns.seq > seq).order(OutboxRecord.Columns.seq).limit(limit).fetchAll(db)
                .map(\.pending)
        }
    }

    /// Records acknowledgements in one transaction: single messages are forgotten (by the version published: a newer
    /// one of a retained topic stays, under its own place); a batch records how many of its alerts, from the first,
    /// are acknowledged, and is forgotten when that is all of them.
    func acknowledge(messages seqs: [Int64], batches: [(seq: Int64, sent: Int)]) throws(StorageError) {
        guard !seqs.isEmpty || !batches.isEmpty else { return }
        try file.write { db in
            try AlertFigures.recordAcknowledged(messages: seqs, batches: batches, at: Date(), in: db)
            // Statements prepared once per connection (this runs at every round the broker acknowledges), the places
            // as one JSON array each.
            if !seqs.isEmpty {
                try db.cachedStatement(sql: "DELETE FROM \(OutboxRecord.databaseTableName) WHERE seq IN (SELECT value FROM json_each(?))")
                    .execute(arguments: [Self.jsonArray(seqs)])
            }
            for batch in batches {
                try db.cachedStatement(sql: "UPDATE \(OutboxRecord.databaseTableName) SET sent = ? WHERE seq = ? AND batch > ?")
                    .execute(arguments: [batch.sent, batch.seq, batch.sent])
                try db.cachedStatement(sql: "DELETE FROM \(OutboxRecord.databaseTableName) WHERE seq = ? AND batch <= ?")
                    .execute(arguments: [batch.seq, batch.sent])
            }
        }
    }

    /// `seqs` as a JSON array, for `json_each`.
    static func jsonArray(_ seqs: some Collection<Int64>) -> String { "[" + seqs.map(String.init).joined(separator: ",") + "]" }

    /// How many messages wait, in the transaction of `db`: a batch counts the alerts it still has to send.
    static func messageCount(_ db: Database) throws -> Int {
        typealias Columns = OutboxRecord.Columns
        let request: SQLRequest<Int> = """
            SELECT COALESCE(SUM(CASE WHEN \(Columns.batch) > 0 THEN \(Columns.batch) - \(Columns.sent) ELSE 1 END), 0)
            FROM \(OutboxRecord.self)
            """
        return try request.fetchOne(db) ?? 0
    }
}

/// A row of `outbox`: a message, or a batch of alerts (``AlertBatch``), waiting for the broker's acknowledgement.
struct OutboxRecord: Codable, Hashable, FetchableRecord, PersistableRecord, BulkInsertable {
    static let databaseTableName = "outbox"

    /// Its place.
    var seq: Int64
    /// What makes it unique (``Publication/key``).
    var key: String
    var topic: String
    var payload: Data
    var retain: Bool
    /// How many alerts the batch holds; 0 for a single message.
    var batch: Int
    /// How many of the batch's alerts, from the first, are acknowledged.
    var sent: Int
    /// The SKU of the alerts it carries; `nil` for any other message.
    var sku: String?

    /// The table's columns.
    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let key = Column(CodingKeys.key)
        static let topic = Column(CodingKeys.topic)
        static let payload = Column(CodingKeys.payload)
        static let retain = Column(CodingKeys.retain)
        static let batch = Column(CodingKeys.batch)
        static let sent = Column(CodingKeys.sent)
        static let sku = Column(CodingKeys.sku)
    }

    static let insertedColumns = [Columns.seq, Columns.key, Columns.topic, Columns.payload, Columns.retain, Columns.batch, Columns.sent, Columns.sku]

    var insertedValues: [(any DatabaseValueConvertible)?] { [seq, key, topic, payload, retain, batch, sent, sku] }

    /// The row of a message as committed, none of it acknowledged yet.
    init(_ message: CommittedPublication) {
        let publication = message.publication
        self.init(
            seq: message.seq, key: publication.key, topic: publication.topic, payload: Data(publication.payload),
            retain: publication.retain, batch: publication.alertCount, sent: 0, sku: publication.sku)
    }

    init(seq: Int64, key: String, topic: String, payload: Data, retain: Bool, batch: Int, sent: Int, sku: String? = nil) {
        self.sku = sku
        self.seq = seq
        self.key = key
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.batch = batch
        self.sent = sent
    }

    /// The message as the publisher sends it.
    var pending: PendingPublication {
        PendingPublication(seq: seq, topic: topic, payload: Array(payload), retain: retain, alertCount: batch, sent: sent)
    }
}
