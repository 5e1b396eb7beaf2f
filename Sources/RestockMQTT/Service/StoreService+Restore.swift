import Foundation
import Mosquitto
import RestockCore
import RestockPipeline
import Deadlines

extension StoreService {
    // MARK: A restored backup

    /// Makes the broker's retained state agree with a state restored from a backup (`restock backup`), before the
    /// store applies a request: the broker may hold mirrors and inventory newer than the backup — customers who
    /// subscribed after it, stock changed since. It reads which mirrors and inventory records the broker retains,
    /// then commits to the outbox every retained topic the store has (``RequestProcessor/retainedPublications``) and
    /// an empty retained payload for each the store has not, which clears it; then the backup's mark goes
    /// (docs/operations.md, "Backup and restore").
    ///
    /// A normal start (no mark) reads one row and goes on.
    func reconcileRestoredState(_ wiring: Wiring) async throws {
        guard try await storage.withExecutor({ try storage.isRestored }) else { return }
        let started = ContinuousClock.now
        let retained = try await retainedTopics(on: wiring.publisher)
        let (published, cleared) = try await storage.withExecutor {
            var changes = StoreChanges()
            changes.publications = try RequestProcessor.retainedPublications(of: core, in: storage, topics: topics, at: clock())
            let owned = Set(changes.publications.map(\.topic))
            let stale = retained.subtracting(owned).sorted()
            changes.publications += stale.map { Publication(key: $0, topic: $0, payload: [], retain: true) }
            // Before any request of this run: nothing for the fence to hold (its messages go out as the outbox is read).
            wiring.fence.pass(try storage.commit(changes), through: 0)
            try storage.restoreReconciled()
            return (owned.count, stale.count)
        }
        wiring.outboxGrew.yield()
        logger.notice(
            "started on a restored backup: the broker's retained mirrors and inventory are made to agree with it",
            metadata: [
                StoreLoggingKeys.republished: "\(published)", StoreLoggingKeys.cleared: "\(cleared)",
                StoreLoggingKeys.milliseconds: "\(Int((ContinuousClock.now - started).seconds * 1000))",
            ])
    }

    /// The topics of every mirror and inventory record the broker retains for this store.
    ///
    /// Retained messages come after the broker's answer to the subscription; to know that the last has come, the store
    /// then publishes its claim again (it holds the claim by now), which the broker delivers after every message it
    /// queued before it. One stream, read in order, sees both.
    private func retainedTopics(on publisher: any BrokerConnection) async throws -> Set<String> {
        let filters = try ["\(topics.root)/customers/+/subscriptions", topics.inventoryFilter].map { try MQTTTopicFilter($0) }
        let messages = try publisher.messages(matching: "\(topics.root)/#")
        for filter in filters { try await publisher.subscribe(to: filter.description) }
        let fence = StoreClaim(store: store.id, instance: instance, at: clock()).payloadBytes()
        try await publisher.publish(fence, to: topics.claim, retain: true)
        let claim = topics.claim
        let retained = try await withDeadline(Self.retainedStateWait, waitingFor: "the broker's retained mirrors and inventory") {
            var retained = Set<String>()
            for await message in messages {
                if message.topic == claim, message.payload == fence { return retained }
                if !message.payload.isEmpty, filters.contains(where: { $0.matches(message.topic) }) { retained.insert(message.topic) }
            }
            throw CancellationError()  // the connection was closed: the store is stopping
        }
        for filter in filters { try await publisher.unsubscribe(from: filter.description) }
        return retained
    }

    /// How long reading the broker's retained state may take at most.
    static let retainedStateWait = 300.0
}
