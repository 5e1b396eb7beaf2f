import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// The store's status on the broker (docs/contract.md, "Status"): `online` with a heartbeat every
/// ``StoreTiming/heartbeat`` while the store holds its session (or has paused it itself: it still owns the
/// store id), at once when something changes (a pause begins or ends, a connection comes back, an offline
/// status replaced this one's: a will published late); nothing while the session is lost and the session watch decides whether it is still
/// the store's; `offline` (stopped) on graceful shutdown, after the other stages have drained, and on cancellation;
/// nothing when the store was taken over, or lost its data directory's lease (checked before each beat).
///
/// The first beat over each connection of the publishing client waits until the session answers
/// (``sessionAnswers()``), while the session is thought to be up: that connection can come back before this process
/// has noticed that its session went with the same broker (a broker restarted while it was frozen), and an online
/// status then would have clients send requests that no subscription takes (found in CI: a `restock subscribe --wait`
/// sent its request then and lost it).
struct Heartbeat: Service {
    let client: any BrokerConnection
    /// The store's session, asked to answer before the first beat over each publishing connection.
    let session: any BrokerConnection
    let topics: RestockTopics
    let store: StoreID
    let instance: String
    /// When this instance went online (its status's `since`).
    let onlineSince: Date
    let lifecycle: StoreLifecycle
    /// The data directory's lease, checked before each beat: a store that lost it says nothing more.
    let lease: any StoreOwnership
    /// Woken when the status should be published now (besides the heartbeat's own interval).
    let triggers: AsyncStream<Void>
    let trigger: AsyncStream<Void>.Continuation
    let clock: @Sendable () -> Date
    let interval: Duration
    /// The clock ``interval`` is measured by (``StoreTiming/clock``).
    let timer: ServiceClock
    /// How long the goodbye waits for the broker's acknowledgement.
    let goodbyeWait: Duration
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        while true {
                            try await timer.sleep(for: interval)
                            trigger.yield()
                        }
                    }
                    group.addTask {
                        for await _ in lifecycle.changes { trigger.yield() }
                    }
                    defer { group.cancelAll() }
                    // The publishing connection the session last answered over.
                    var confirmedConnection: UInt64?
                    for await _ in triggers where lifecycle.isLive {
                        try Task.checkCancellation()
                        guard holdsLease() else { continue }
                        let connection = client.connectionCount
                        // A session the store dropped itself (a pause) is not asked: the status says why it waits.
                        if connection != confirmedConnection, lifecycle.isSessionConnected {
                            guard await sessionAnswers() else { continue }
                            confirmedConnection = connection
                        }
                        // At QoS 0, sent now or not at all: a beat queued while the broker was away, or in flight when it
                        // went, would be sent again once the connection is back, before this process knows whether its
                        // session came back too, and tell clients it takes requests that no subscription would take
                        // (found by an outside trial after a broker restart). The next beat comes all the same.
                        try? await client.sendNow(onlineStatus().payloadBytes(), to: topics.status, retain: true).acknowledged()
                    }
                }
            }
        } catch is CancellationError {}
        // Taken over: say nothing over another instance's status.
        guard lifecycle.takenOverBy == nil else { return }
        guard client.isConnected else { return }  // the will says offline
        let goodbye = StoreStatus.stopped(store: store, at: clock(), instance: instance)
        // Sent, and its acknowledgement waited for in a task of its own, which the cancellation of the store's task (an
        // embedding program stopping it without a graceful shutdown) does not reach: the next store of the id then need
        // not wait for a heartbeat to go stale. At most `goodbyeWait`, whether or not the wait for the acknowledgement
        // heeds a cancellation: the connection it waits on closes only after this stage has returned.
        guard let publication = try? client.send(goodbye.payloadBytes(), to: topics.status, retain: true) else { return }
        let acknowledged = Latch()
        Task {
            _ = try? await publication.acknowledged()
            _ = acknowledged.open()
        }
        _ = await Task { await acknowledged.wait(timeout: goodbyeWait) }.value
    }

    /// Whether the store's session answers on the broker now: a round trip on it (an UNSUBSCRIBE of the delivery probe's
    /// topic, which nothing subscribes), within a second.
    func sessionAnswers() async -> Bool {
        guard session.isConnected else { return false }
        let (session, probe) = (session, topics.deliveryProbe)
        // Waited for at most a second, whether or not the wait for the answer heeds a cancellation.
        let answered = Latch()
        let asking = Task {
            if (try? await session.unsubscribe(from: probe)) != nil { _ = answered.open() }
        }
        defer { asking.cancel() }
        return await answered.wait(timeout: .seconds(1))
    }

    /// Whether this process still holds the data directory's lease, as the file says now; tells the lifecycle when not.
    /// A lease that cannot be read now (a lock, a full disk) counts as held: its renewal decides.
    func holdsLease() -> Bool { lifecycle.stillHolds(lease) }

    /// This instance's online status, with a fresh heartbeat, and why it takes no requests if it is paused.
    func onlineStatus() -> StoreStatus {
        StoreStatus.online(store: store, since: onlineSince, instance: instance, heartbeatAt: clock(), paused: lifecycle.pauseReason)
    }
}
