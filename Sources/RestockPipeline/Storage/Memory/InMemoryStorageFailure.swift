/// Why the memory backend refused a write that SQLite's schema refuses too: the same kind of failure
/// (``StorageError/Kind/corrupt``: trying again cannot help), so that a store behaves alike on both.
struct InMemoryStorageFailure: StorageFailure {
    /// What was refused, in a few words.
    let reason: String

    /// A watch saved at `position`, which another watch holds (SQLite's `UNIQUE` constraint on `watch.position`).
    static func positionTaken(_ position: UInt64, by key: WatchKey) -> InMemoryStorageFailure {
        InMemoryStorageFailure(reason: "position \(position) is held by the watch of \(key.customer) on \(key.sku)")
    }

    func kind(at path: String) -> StorageError.Kind { .corrupt }

    /// SQLite's code for a constraint violated, to tell it from other failures.
    var code: Int { 19 }

    /// A constraint violated, as SQLite's.
    var refusesTheData: Bool { true }
}
