import Foundation
import GRDB

/// The dead letters of the store's state: requests set aside because applying them killed the store (crash
/// containment, see ``Attempt``), kept for an operator to look at.
struct DeadLetters: Sendable {
    private let file: StorageFile

    /// The dead letters of the store's state in `writer`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    init(_ writer: any DatabaseWriter, path: String? = nil, fence: LeaseFence? = nil) {
        file = StorageFile(writer, path: path, fence: fence.map { ($0, .state) })
    }

    /// Sets `request` aside, records it as processed, and queues `error`, the message that tells its sender, in one
    /// transaction.
    func setAside(_ request: JournaledRequest, error: CommittedPublication, reason: String = DeadLetterRecord.defaultReason, at date: Date) throws(StorageError) {
        try file.write { db in
            var record = DeadLetterRecord(request, failedAt: date)
            record.reason = reason
            try record.insert(db, onConflict: .replace)
            try Outbox.insert([error], in: db)
            try CounterRecord.recordProcessed(through: request.seq, in: db)
        }
    }

    /// Every request set aside, oldest first, with when and why.
    func records() throws(StorageError) -> [DeadLetterRecord] {
        try file.read { db in try DeadLetterRecord.order(DeadLetterRecord.Columns.seq).fetchAll(db) }
    }

    /// The request set aside at `seq`, if any.
    func record(_ seq: Int64) throws(StorageError) -> DeadLetterRecord? {
        try file.read { db in try DeadLetterRecord.fetchOne(db, key: seq) }
    }

    /// Every request set aside, oldest first.
    func all() throws(StorageError) -> [JournaledRequest] {
        try file.read { db in try DeadLetterRecord.order(DeadLetterRecord.Columns.seq).fetchAll(db).map(\.request) }
    }
}

/// A row of `deadLetter`: a request set aside, with its place in the request log.
struct DeadLetterRecord: Codable, Hashable, FetchableRecord, PersistableRecord, JournaledRequestRow {
    static let databaseTableName = "deadLetter"

    var seq: Int64
    var topic: String
    var payload: Data
    /// The payload's size as received.
    var size: Int
    var retained: Bool
    /// When it was set aside, in seconds since 1970-01-01.
    var failedAt: Double
    /// Why: one sentence.
    var reason = DeadLetterRecord.defaultReason
    /// The reason of a row written before reasons were kept.
    static let defaultReason = "the store failed while applying this request"

    /// The table's columns.
    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let topic = Column(CodingKeys.topic)
        static let payload = Column(CodingKeys.payload)
        static let size = Column(CodingKeys.size)
        static let retained = Column(CodingKeys.retained)
        static let failedAt = Column(CodingKeys.failedAt)
    }

    init(_ request: JournaledRequest, failedAt date: Date) {
        seq = request.seq
        topic = request.topic
        payload = Data(request.payload)
        size = request.size
        retained = request.retained
        failedAt = date.timeIntervalSince1970
    }
}
