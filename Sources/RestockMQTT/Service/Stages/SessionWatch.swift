import Deadlines
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// Watches the store's session — the connection that takes requests — and decides when it may be made again
/// (docs/contract.md, "One store per store id"; docs/operations.md, "A full disk").
///
/// The session client reconnects only when allowed (``MQTTReconnection/whenAllowed``). After a loss the watch
/// allows it once:
/// - the request log can be written again, if the journal paused (it probes the log every second);
/// - no other instance is live: the store's publishing connection watches the status (``StoreLiveness``), and an
///   instance whose heartbeat changes took the session over. Then this store stops, without saying offline.
///
/// Back online, a broker that had lost the session (restarted without persistence) has lost the retained topics
/// too: the watch asks the applying stage to publish them all again. On graceful shutdown it closes the session
/// first, so that no request is taken while the store drains.
struct SessionWatch: Service {
    let client: any BrokerConnection
    /// The session's connection events, made before it first connected.
    let events: AsyncStream<MQTTConnectionEvent>
    let storage: any StoreStorage
    let lifecycle: StoreLifecycle
    let liveness: StoreLiveness
    /// Holds what unconfirmed requests led to; released once the watch decides the session is this store's.
    let fence: DeliveryFence
    let store: StoreID
    let instance: String
    /// A filter nothing subscribes to (the delivery probe's), unsubscribed from to learn that what was sent before on
    /// the session has reached the broker.
    let probeFilter: String
    /// Asks the applying stage to publish every retained topic again.
    let republish: @Sendable () -> Void
    /// Has the publishing connection read the retained status and claim again, so that ``liveness`` holds the
    /// broker's current view, not one a stalled process kept.
    let refreshView: @Sendable () async throws -> Void
    let logger: Logger

    /// How often a paused journal tries the log again.
    let probeInterval: Duration
    /// How long one reading of the status and claim may take before it is tried again (an answer lost with a
    /// connection must not hold the session down for good).
    let readTimeout: Duration
    /// How often a status that cannot be read is logged again, as a warning.
    let reportEvery: Duration
    let metrics: StoreMetrics
    /// Told which broker of the list the session is on, for `/readyz`.
    let health: StoreHealth
    /// The clock the retries and the reports of an unreadable status are timed by.
    let clock: ServiceClock

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var connections = 0
                for await event in events {
                    metrics.count(event, on: .session, connections: &connections)
                    switch event {
                    case .connected(let sessionPresent):
                        // A broker without the session has the client's subscriptions made again at the CONNACK: the
                        // store says online only once they are in place, as a client that sees it online sends its
                        // requests at once, and one sent before them is lost (seen in CI: a subscribe sent as the store
                        // came back from a broker restart got no answer).
                        if connections > 1, !sessionPresent { await waitForTheSubscriptions() }
                        // The broker first: /readyz, ready from sessionConnected() on, names it (answered a bare
                        // `ok` between the two before, found by the issue 25 trial).
                        let broker = client.broker ?? "unknown"
                        metrics.recordBroker(broker, previous: health.broker)
                        health.connected(to: broker)
                        lifecycle.sessionConnected()
                        logger.info(
                            connections == 1 ? "connected to the broker" : "reconnected to the broker",
                            metadata: [StoreLoggingKeys.session: "\(sessionPresent)", StoreLoggingKeys.broker: "\(broker)"])
                        if connections > 1, !sessionPresent {
                            logger.notice("the broker had no session for the store: its retained topics are published again")
                            republish()
                        }
                    case .connectionLost(let reason):
                        lifecycle.sessionLost()
                        if !lifecycle.isPaused(.journal) {
                            logger.warning("the store's session with the broker was lost", metadata: [StoreLoggingKeys.reason: "\(reason)"])
                        }
                        try await waitForPermission()
                        releaseHeld(because: "no newer instance took the session")
                        client.allowReconnect()
                    case .disconnected:
                        return
                    }
                }
            }
        } catch is CancellationError {}
        let wasConnected = lifecycle.isSessionConnected
        lifecycle.sessionLost()
        metrics.brokerConnected[.session]?.record(0)
        await client.disconnect()
        // Closed by this store while it held the session: the acknowledgements went out before its DISCONNECT, which
        // the broker reads after them; what they led to is drained with the rest.
        if wasConnected { releaseHeld(because: "the store closed its session itself") }
    }

    /// Returns once the subscriptions the client made again at the last CONNACK are in place: the broker answers this
    /// connection's packets in order, so an UNSUBSCRIBE of the delivery probe's filter (which nothing subscribes to)
    /// answered after them says they were taken. Also returns when the connection went meanwhile (its loss is the next
    /// event) or no answer came within ``readTimeout``: the store then says online as it did before it waited.
    private func waitForTheSubscriptions() async {
        do {
            try await withDeadline(readTimeout.seconds, waitingFor: "the broker's answer after the subscriptions made again") {
                try await client.unsubscribe(from: probeFilter)
            }
        } catch {
            logger.debug("the subscriptions made again are not known to be in place", metadata: [StoreLoggingKeys.error: "\(error)"])
        }
    }

    /// Passes on what the fence holds, saying so when it held anything.
    private func releaseHeld(because reason: String) {
        let held = fence.heldCount
        fence.releaseAll()
        guard held > 0 else { return }
        logger.notice(
            "publishing \(held) messages held until the broker confirmed their requests: \(reason)",
            metadata: [StoreLoggingKeys.reason: "\(reason)"])
    }

    /// Returns once the session may be made again; throws when the store must stop instead.
    private func waitForPermission() async throws {
        try await lifecycle.waitUntilTheJournalResumes(trying: storage, every: probeInterval)
        // While the broker cannot be reached (it restarts, the network is cut) the view cannot be read: the session
        // stays down until it can, so that it is never taken back from a newer instance on an unread status.
        let since = clock.now
        var reported: ContinuousClock.Instant?
        // Read again soon after a failure, then less often, up to the probe interval: a broker back after an outage of
        // any length is read within that interval.
        let retry = MQTTBackoff(initialDelay: min(.milliseconds(200), probeInterval), maximumDelay: probeInterval)
        var attempt = 0
        while true {
            do {
                try await withDeadline(readTimeout.seconds, waitingFor: "the broker's answer to reading the store's status") {
                    try await refreshView()
                }
                break
            } catch let error where error is MQTTError || error is DeadlineExceeded {
                // Once at debug when it begins, then as a warning after a liveness window and every `reportEvery`.
                if reported == nil {
                    logger.debug("cannot read the store's status yet", metadata: [StoreLoggingKeys.error: "\(error)"])
                    reported = since
                }
                if let last = reported, clock.now - last >= (last == since ? readTimeout : reportEvery) {
                    logger.warning(
                        "the session stays down until the store's status can be read on the broker, so that it is never taken back from a newer instance",
                        metadata: [StoreLoggingKeys.error: "\(error)", StoreLoggingKeys.reason: "for \(Int((clock.now - since).seconds)) s"])
                    reported = clock.now
                }
                try await clock.sleep(for: retry.delay(beforeAttempt: attempt, random: Double.random(in: 0..<1)))
                attempt = min(attempt + 1, 62)
            }
        }
        // A newer instance took the session (libmosquitto does not pass on MQTT 5's "session taken over"): its status
        // came here live, its claim says it started later, or its heartbeat changes while this one waits — even when
        // this one's own heartbeats, held by a partition or a frozen process, reached the broker late and overwrote its
        // status, and even when it has stopped or died since. It stands: this one stops, applying nothing more.
        if let winner = try await liveness.newerInstance(than: instance) {
            lifecycle.takenOver(by: winner)
            let held = fence.heldCount
            if held > 0 {
                logger.warning(
                    "dropping \(held) messages of requests the broker may have delivered to the newer instance too; they stay in the outbox",
                    metadata: [StoreLoggingKeys.instance: "\(winner)"])
            }
            throw RestockMQTTError.storeTakenOver(store: store.rawValue, instance: winner)
        }
    }
}
