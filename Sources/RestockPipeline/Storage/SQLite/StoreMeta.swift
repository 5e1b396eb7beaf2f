import GRDB

/// What the store's state records about itself (the `meta` table): the store that owns it, the store process that
/// used it last, and the request log it was written with.
struct StoreMeta: Sendable {
    private let file: StorageFile

    /// The records of the store's state in `writer`, whose schema is ready (``StateSchema``).
    /// - Parameter path: The path errors name; the writer's own when `nil`.
    init(_ writer: any DatabaseWriter, path: String? = nil) {
        file = StorageFile(writer, path: path)
    }

    /// The file, as its errors name it.
    var path: String { file.path }

    /// Records `value` under `key` unless a value is recorded there already; returns the value recorded now.
    func recordOnce(_ key: MetaRecord.Key, _ value: String) throws(StorageError) -> String? {
        try file.write { db in
            try MetaRecord(key, value).insert(db, onConflict: .ignore)
            return try MetaRecord.value(of: key, in: db)
        }
    }

    /// Records `value` under `key`; returns the value recorded before.
    func replace(_ key: MetaRecord.Key, with value: String) throws(StorageError) -> String? {
        try file.write { db in
            let previous = try MetaRecord.value(of: key, in: db)
            try MetaRecord(key, value).insert(db, onConflict: .replace)
            return previous
        }
    }

    /// The value recorded under `key`, if any.
    func value(of key: MetaRecord.Key) throws(StorageError) -> String? {
        try file.read { db in try MetaRecord.value(of: key, in: db) }
    }

    /// Records `value` under `key` (`nil`: removes what is recorded there).
    func set(_ key: MetaRecord.Key, to value: String?) throws(StorageError) {
        try file.write { db in
            if let value {
                try MetaRecord(key, value).insert(db, onConflict: .replace)
            } else {
                _ = try MetaRecord.filter(key: key.rawValue).deleteAll(db)
            }
        }
    }
}
