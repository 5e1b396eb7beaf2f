import Foundation
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
    package func waitForTheOwnerToGo(of store: StoreID) async throws -> StandbyTakeover {
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
                    return StandbyTakeover(hold: nil, seen: holder)
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
