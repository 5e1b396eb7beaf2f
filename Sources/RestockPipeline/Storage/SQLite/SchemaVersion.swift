import GRDB

/// The schema version of one of the data directory's SQLite files: how many of its `DatabaseMigrator`'s migrations
/// it has run, also kept in the file's `PRAGMA user_version` for tools that read it (`sqlite3 FILE 'PRAGMA
/// user_version'`).
///
/// A file that has run a migration this binary does not know, or whose `user_version` is above the migrations it
/// knows, was written by a newer RestockAlerter: it is refused before anything is written to it (a downgrade would
/// lose what the newer version keeps; docs/operations.md, "Upgrading").
package struct SchemaVersion: Sendable, Equatable, CustomStringConvertible {
    /// The file, as its errors name it.
    package let path: String
    /// The version the file had when it was opened: 0 for a new file.
    package let from: Int
    /// The version it has now.
    package let to: Int

    /// The migration of `path` from version `from` to `to`.
    package init(path: String, from: Int, to: Int) {
        self.path = path
        self.from = from
        self.to = to
    }

    /// `migrated /data/store.sqlite from schema version 3 to 4 (RestockAlerter 1.0.0)`, or `created …` for a new file. A
    /// file that had run every migration but did not record its version (releases before the versions, which wrote no
    /// `user_version`: their `journal.sqlite` has the migrations of today) is migrated from that version to the same.
    package var description: String {
        if from == 0 { return "created \(path) at schema version \(to) (RestockAlerter \(RestockVersion.current))" }
        if from == to {
            return "migrated \(path) from schema version \(from) to \(to): recorded its version, which releases before schema versions did not (RestockAlerter \(RestockVersion.current))"
        }
        return "migrated \(path) from schema version \(from) to \(to) (RestockAlerter \(RestockVersion.current))"
    }

    /// Refuses a file of a newer version, runs the migrations `writer` has not run yet and records the version.
    /// - Returns: What ran: `nil` when the file was at this version already, and recorded it.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)`` for a file of a
    ///   newer version; what SQLite throws.
    static func migrate(_ writer: any DatabaseWriter, with migrator: DatabaseMigrator, path: String) throws -> SchemaVersion? {
        let known = migrator.migrations.count
        let (applied, recorded) = try refuseNewer(writer, than: migrator, path: path)
        guard applied.count != known || recorded != known else { return nil }
        try storageAccess(.write, path) {
            try migrator.migrate(writer)
            try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = \(known)") }
        }
        // Also when only the version was recorded: the upgrade wrote to the file, and says so (issue 32: a journal of an
        // earlier release migrated silently).
        return SchemaVersion(path: path, from: applied.count, to: known)
    }

    /// Refuses a file of a newer version, read through `reader` (nothing is written: a reader beside a running store,
    /// such as `restock export`, refuses it as the store's start does, rather than read rows a newer version may have
    /// given another meaning).
    /// - Returns: The migrations the file has run, and the version it records.
    /// - Throws: ``RestockMQTTError/dataDirectoryOfNewerVersion(file:schemaVersion:knownVersion:)``; what SQLite throws.
    @discardableResult
    static func refuseNewer(_ reader: any DatabaseReader, than migrator: DatabaseMigrator, path: String) throws -> (applied: Set<String>, recorded: Int) {
        let known = migrator.migrations.count
        let (applied, recorded) = try storageAccess(.open, path) {
            try reader.read { db in (try migrator.appliedIdentifiers(db), try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0) }
        }
        if !applied.subtracting(migrator.migrations).isEmpty || recorded > known {
            throw RestockMQTTError.dataDirectoryOfNewerVersion(file: path, schemaVersion: max(recorded, applied.count), knownVersion: known)
        }
        return (applied, recorded)
    }
}
