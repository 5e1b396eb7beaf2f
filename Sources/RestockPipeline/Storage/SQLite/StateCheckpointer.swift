import Dispatch
import GRDB
import Logging
import Synchronization

/// Copies the store's state's write-ahead log into its file on a thread of its own, a few commits at a time, instead of
/// SQLite's automatic checkpoint inside a commit on the pipeline's thread (docs/benchmarks.md, "B4's p99").
///
/// SQLite checkpoints a WAL-mode file when a commit leaves its write-ahead log past 1,000 pages: that commit syncs the
/// log (4 MB, ≈ 3 ms on the bench's disk), copies it, and syncs the file, on the thread that committed — so every
/// request waiting behind it waited too. The state's writer runs with the automatic checkpoint off, and this makes a
/// `PASSIVE` checkpoint from a connection of its own after every ``commitsPerCheckpoint`` commits: it never takes the
/// write lock, so commits go on while it syncs, and a smaller log syncs in smaller steps. A checkpoint that cannot do
/// all it would (a reader on an older snapshot, a backup) leaves the rest to the next one.
final class StateCheckpointer: Sendable {
    /// How many commits of the state go between two checkpoints (a stock change writes about eight pages).
    static let commitsPerCheckpoint = 32

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "restock.checkpoint")
    private struct State {
        var commits = 0
        var running = false
    }

    private let state = Mutex(State())
    /// Held while a checkpoint of the state runs, this one's or a truncating one (``exclusively(_:)``): SQLite runs one
    /// checkpoint of a file at a time and answers a second with `SQLITE_BUSY` at once, whatever the busy timeout. A
    /// forget's truncating checkpoint failed so when it met a passive one, and the customer's bytes stayed in the
    /// write-ahead log until the next (found by the storage's differential test under CI's load).
    private let checkpointing = Mutex(())
    /// A checkpoint that fails is said at warning level, at most once a minute: the log then grows until one succeeds.
    private let logger = Logger(label: "restock.store")
    private let failures = LogThrottle()

    /// A checkpointer of the state at `path`, whose writer runs with the automatic checkpoint off.
    init(path: String) throws(StorageError) {
        var configuration = Configuration()
        configuration.busyMode = .timeout(DataDirectory.busyTimeout)
        connection = try storageAccess(.open, path) { try DatabaseQueue(path: path, configuration: configuration) }
    }

    /// A commit of the state was made: a checkpoint is started once enough have been, unless one is running.
    func committed() {
        let start = state.withLock { state in
            state.commits += 1
            guard state.commits >= Self.commitsPerCheckpoint, !state.running else { return false }
            state.commits = 0
            state.running = true
            return true
        }
        guard start else { return }
        queue.async { [self] in
            // PASSIVE: as much as it can without waiting; what is left goes at the next one.
            do {
                _ = try checkpointing.withLock { _ in try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) } }
            } catch {
                if failures.admit().say {
                    logger.warning(
                        "cannot checkpoint the store's state (said at most once a minute); its write-ahead log grows until a checkpoint succeeds",
                        metadata: [StoreLoggingKeys.error: "\(error)"])
                }
            }
            state.withLock { $0.running = false }
        }
    }

    /// Runs `checkpoint` (a truncating checkpoint of the state, from another connection) once no checkpoint of this one
    /// runs, and none starts until it is done.
    func exclusively<T>(_ checkpoint: () throws(StorageError) -> T) throws(StorageError) -> T {
        try checkpointing.withLock { _ throws(StorageError) in try checkpoint() }
    }
}
