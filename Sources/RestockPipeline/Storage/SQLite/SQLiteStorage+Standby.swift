import Foundation
import Logging
import RestockCore

extension SQLiteStorage {
    /// How often a standby looks at the data directory's lease (the lock wakes it by itself).
    static let leaseLook = StoreLease.renewalInterval

    /// Creates the data directory if need be and refuses at once one no store could use, or another store's
    /// (``StoreDatabase/prepare(_:for:)``).
    package func prepareStandby(for store: StoreID) throws {
        try StoreDatabase.prepare(directory, for: store)
    }

    /// Waits until the live process has let the directory go (the directory's lock, taken here: the kernel wakes the
    /// wait) or its lease lapsed (not renewed for ``StoreLease/lifetime`` by this process's monotonic clock, looked at
    /// every ``StoreLease/renewalInterval``). Ends with a `CancellationError` when cancelled.
    ///
    /// The lock may come to this standby while the lease's holder is a live store without it — a standby that took over
    /// from a frozen process, which then ended. The lock is that owner's to take (``StoreDatabase/adoptTheLockWhenFree()``):
    /// this standby lets it go at once, and waits on it again once the owner holds it, so that the owner's end wakes it
    /// (found by an outside trial: a second standby kept the lock, the owner never got it, and its end took 5–6 s to
    /// notice instead of half a second).
    ///
    /// An owner whose lease lapsed while it holds a lock of the store's files (frozen in the middle of a write) would keep
    /// this standby waiting as long as it lives: this standby ends it (``StalledOwner``), and says so in `logger`.
    package func waitForTheOwnerToGo(of store: StoreID, logger: Logger) async throws -> StandbyTakeover {
        let directory = directory
        // A look at the lease each second, and the lock whenever the kernel hands it over.
        let (looks, look) = AsyncStream.makeStream(of: DirectoryLock?.self)
        let decision: StandbyTakeover? = await withTaskGroup(of: Void.self) { group in
            func waitForTheLock() {
                group.addTask {
                    guard let lock = await StoreDatabase.waitForLock(on: directory) else { return }
                    look.yield(lock)
                }
            }
            waitForTheLock()
            group.addTask {
                while (try? await Task.sleep(for: Self.leaseLook)) != nil { look.yield(nil) }
            }
            defer { group.cancelAll() }
            look.yield(nil)
            var watch = LeaseWatch(lifetime: StoreLease.lifetime)
            var lock: DirectoryLock?
            var waitingForTheLock = true
            // Said once each: the processes this standby ended, the locks it found held by another.
            var ended: Set<pid_t> = [], told: Set<StalledOwner.Blocker> = []
            for await got in looks {
                if let got {
                    lock = got
                    waitingForTheLock = false
                }
                let holder = StoreLease.holder(readingOnly: directory)
                let lapsed = holder.map { watch.lapsed($0, at: .now) } ?? false
                if let held = lock {
                    // The lock's last holder is gone. Unless the lease is held by a live process that never had the lock:
                    guard let holder, !holder.holdsLock, !holder.isReleased, !lapsed else { return StandbyTakeover(hold: held, seen: holder) }
                    held.release()
                    lock = nil
                } else if let holder, lapsed {
                    // A lapsed owner that holds a lock of the files would keep the takeover waiting as long as it lives.
                    switch StalledOwner.end(ownerOf: directory, seen: holder) {
                    case .free:
                        return StandbyTakeover(hold: nil, seen: holder)
                    case .ended(let blocker, let state):
                        if ended.insert(blocker.pid).inserted {
                            logger.warning(
                                "the live store process (instance \(holder.owner), pid \(blocker.pid)\(state.map { ", \($0)" } ?? "")) has not renewed its lease for \(StoreLease.lifetime.components.seconds) s and holds a lock of \(blocker.file): this standby ended it (SIGKILL) to take over")
                        }
                        continue  // its end frees the directory's lock (if it held it), or the next look finds the files free
                    case .heldByAnother(let blocker, let owner):
                        if told.insert(blocker).inserted {
                            // Named with its command, so that nobody ends a standby in the middle of its own takeover (which holds
                            // the lock for a moment) on this line's word: an outside trial saw one named here.
                            let who =
                                blocker.pid == 0
                                ? "a process of another pid namespace (a store frozen in another container? end it there)"
                                : "process \(blocker.pid) (\(ProcessIdentity.command(of: blocker.pid) ?? "ended since"))"
                            let recorded = owner.map { "pid \($0.pid)" } ?? "not recorded"
                            logger.error(
                                "the live store process (instance \(holder.owner)) has not renewed its lease for \(StoreLease.lifetime.components.seconds) s, and \(who) holds a lock of \(blocker.file) (the owner's process: \(recorded)): this standby waits until it lets go")
                        }
                        return StandbyTakeover(hold: nil, seen: holder)
                    }
                }
                // Wait on the lock again once nobody alive needs it more: the owner holds it, or there is no owner.
                if !waitingForTheLock, holder.map({ $0.holdsLock || $0.isReleased }) ?? true {
                    waitForTheLock()
                    waitingForTheLock = true
                }
            }
            return nil
        }
        guard let decision else { throw CancellationError() }
        return decision
    }
}
