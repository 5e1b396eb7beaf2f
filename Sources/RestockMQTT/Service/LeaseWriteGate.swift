import Foundation
import Mosquitto
import RestockPipeline

/// The store's connections may write to the broker only while this process holds the data directory's lease
/// (``StoreLease``): asked by their network threads after a pause — the process frozen, or starved, for over a second —
/// and before every reconnect (``MQTTWriteGate``). It renews the lease then: a renewal that succeeds gives this process
/// the lease's whole lifetime again before a standby may judge it gone, so what follows is written by the owner. Once
/// a newer owner holds the lease it refuses, and tells the lifecycle, which stops the store as the renewal stage would
/// (``LeaseRenewal``): what libmosquitto still had queued from before the freeze never reaches the broker (found by an
/// outside trial: a resumed store sent 555 of 800 alerts again, and a stale retained inventory).
///
/// A renewal that fails for another reason (a full disk, a lock held) falls back to reading the lease; a lease that
/// cannot be read at all lets the write go, as the commits, fenced themselves, still refuse a stale owner.
struct LeaseWriteGate: MQTTWriteGate {
    let lease: any StoreOwnership
    let lifecycle: StoreLifecycle

    func mayWrite() -> Bool {
        do {
            try lease.renew(at: Date())
            return true
        } catch where error.kind == .leaseLost {
            lifecycle.loseLease(error)
            return false
        } catch {
            return lifecycle.stillHolds(lease)
        }
    }
}
