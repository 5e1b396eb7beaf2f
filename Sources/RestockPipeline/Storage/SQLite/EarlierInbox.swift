import Foundation
import GRDB

/// The requests an earlier version journaled in the store's state (the `inbox` table), before the request log
/// had a file of its own (``RequestLog``): carried over to the log at start-up.
struct EarlierInbox: Sendable {
    private let file: StorageFile

    /// The inbox of the store's state in `writer`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    init(_ writer: any DatabaseWriter, path: String? = nil) {
        file = StorageFile(writer, path: path)
    }

    /// Moves the requests of the inbox to `log`, keeping their places, and makes sure the log gives out places after
    /// every request already applied (up to `applied`): a log deleted by hand must not make new requests look applied.
    func move(to log: RequestLog, applied: Int64) throws(StorageError) {
        let requests = try file.read { db in
            try EarlierInboxRecord.order(EarlierInboxRecord.Columns.seq).fetchAll(db).map(\.request)
        }
        try log.adopt(requests)
        if !requests.isEmpty { try file.write { db in _ = try EarlierInboxRecord.deleteAll(db) } }
        try log.continue(after: max(applied, requests.last?.seq ?? 0))
    }
}

/// A row of `inbox`: a request an earlier version journaled (its `attempts` column is no longer read).
struct EarlierInboxRecord: Codable, Hashable, FetchableRecord, PersistableRecord, JournaledRequestRow {
    static let databaseTableName = "inbox"

    var seq: Int64
    var topic: String
    var payload: Data
    /// The payload's size as received; 0 in rows journaled before sizes were kept.
    var size: Int
    var retained: Bool

    typealias Columns = JournaledRequestColumns
}
