import Deadlines
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// Publishes how far the store's journal goes, retained on `P/{store}/journal` (docs/contract.md, "Journal witness"),
/// for a backend whose servers can be replaced under the store (``JournalWitness``: PostgreSQL): after each batch the
/// journal writes, at most one publication in flight (later batches wait for its acknowledgement and go as one), and
/// again every heartbeat, so that one lost, or overwritten by a fenced former owner's late one, is put right.
///
/// A store or standby that starts reads it before it opens its storage (``JournalWitnessReader``): a database server
/// whose journal goes less far — a former primary started again on its own — is not used.
struct JournalWitnessPublisher: Service {
    /// The publishing connection: its write gate sends nothing once a newer owner holds the lease.
    let client: any BrokerConnection
    let topic: String
    let store: StoreID
    /// How far the journal goes, as the storage saw it (``JournalWitness/place(of:)``).
    let witness: any JournalWitness
    /// Woken by the journal after each batch.
    let wakeups: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation
    let lifecycle: StoreLifecycle
    let interval: Duration
    let clock: ServiceClock
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    while true {
                        try await clock.sleep(for: interval)
                        wake.yield()
                    }
                }
                defer { group.cancelAll() }
                var published: (through: Int64, at: ContinuousClock.Instant)?
                var refusalLogged: ContinuousClock.Instant?
                for await _ in wakeups {
                    try Task.checkCancellation()
                    guard lifecycle.isLive, lifecycle.leaseLost == nil else { continue }
                    guard let through = witness.place(of: store) else { continue }
                    // Growth at once; the same place again once a heartbeat.
                    if let published, published.through == through, clock.now - published.at < interval { continue }
                    do {
                        let sent = clock.now
                        try await client.send(JournalWitnessPayload(store: store, through: through).payloadBytes(), to: topic, retain: true)
                            .acknowledged()
                        published = (through, sent)
                    } catch MQTTError.publishRefused(_, _, let reason) {
                        // An ACL without the topic: the guard is off, which an operator must hear of (once a minute).
                        if refusalLogged.map({ clock.now - $0 >= .seconds(60) }) ?? true {
                            refusalLogged = clock.now
                            logger.error(
                                "the broker refused the journal witness on \(topic) (\(reason)): nothing guards a start against a former primary; let the store's user read and write it (deploy/mosquitto/acl; said again once a minute)")
                        }
                    } catch {
                        logger.debug("the journal witness was not acknowledged: \(error); it is published again", metadata: [StoreLoggingKeys.error: "\(error)"])
                    }
                }
            }
        }
    }
}
