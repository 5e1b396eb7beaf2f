import GRDB
import RestockCore

/// Commits what a batch of requests changed (``StoreChanges``) to the store's state, in one transaction:
/// watches, inventory, counters, the customers with a mirror, the messages to publish, and how far the request log
/// is applied.
struct StateWriter: Sendable {
    private let file: StorageFile

    /// A writer of the store's state in `writer`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    init(_ writer: any DatabaseWriter, path: String? = nil, fence: LeaseFence? = nil) {
        file = StorageFile(writer, path: path, fence: fence.map { ($0, .state) })
    }

    /// Commits `changes`, with `messages`, its publications at the places the outbox gave them (``Outbox/place(_:)``).
    /// - Parameter journalSynced: The last place of the request log synced to the disk by now (``PairCheck``), recorded
    ///   with how far the log is applied; `nil`: not recorded (tests of the state alone).
    func commit(_ changes: StoreChanges, messages: [CommittedPublication], journalSynced: Int64? = nil) throws(StorageError) {
        if changes.durable {
            try file.writeDurably { db in try Self.write(changes, messages: messages, journalSynced: journalSynced, in: db) }
        } else {
            try file.write { db in try Self.write(changes, messages: messages, journalSynced: journalSynced, in: db) }
        }
    }

    /// Writes `changes` in the transaction of `db`.
    private static func write(_ changes: StoreChanges, messages: [CommittedPublication], journalSynced: Int64?, in db: Database) throws {
        try WatchTable.apply(changes.watchChanges, in: db)
        try Self.stock.insert(changes.inventory.map { StockRecord(sku: $0.key.rawValue, quantity: $0.value) }, in: db)
        if let counters = changes.counters {
            try CounterRecord.record(.nextPosition, Int64(counters.nextPosition), in: db)
            try CounterRecord.record(.nextAlertSequence, Int64(counters.nextAlertSequence), in: db)
        }
        for forgotten in changes.forgotten { try Self.forget(forgotten, in: db) }
        for seq in changes.deadLettersRemoved { try db.execute(sql: "DELETE FROM deadLetter WHERE seq = ?", arguments: [seq]) }
        try AlertFigures.record(raised: changes.alertsRaised, at: changes.appliedAt, in: db)
        try Self.mirrors.insert(changes.mirrored.sorted().map { MirrorRecord(customer: $0.rawValue) }, in: db)
        try Outbox.insert(messages, in: db)
        if let seq = changes.processedThrough {
            try CounterRecord.recordProcessed(through: seq, in: db)
            if let journalSynced { try CounterRecord.record(.journalSyncedThrough, journalSynced, in: db) }
        }
    }

    // A batch of 512 requests may change the stock of 512 SKUs, or add a mirror for 512 new customers: many rows to
    // a statement (BulkStatement.swift), not one record at a time (3 and 8 times as long for 20,000 rows).
    private static let stock = BulkStatement(inserting: StockRecord.self, orElse: .replace)
    private static let mirrors = BulkStatement(inserting: MirrorRecord.self, orElse: .ignore)

    /// Removes every row about a forgotten customer but their watches (the batch's watch changes remove those): the
    /// record of their mirror, what the outbox holds for them, the requests of theirs set aside.
    private static func forget(_ forgotten: StoreChanges.Forgotten, in db: Database) throws {
        try db.execute(sql: "DELETE FROM mirror WHERE customer = ?", arguments: [forgotten.customer.rawValue])
        for topic in forgotten.customerTopics { try db.execute(sql: "DELETE FROM outbox WHERE topic = ?", arguments: [topic]) }
        for topic in forgotten.requestTopics { try db.execute(sql: "DELETE FROM deadLetter WHERE topic = ?", arguments: [topic]) }
    }

    /// The file, as its errors name it.
    var path: String { file.path }
}
