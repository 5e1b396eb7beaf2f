import Logging
import Mosquitto

/// Publishes what the outbox holds, in commit order, and forgets each message once the broker has
/// acknowledged it. After a crash, or a lost connection, whatever was not acknowledged goes out again
/// with the same payload (and the same alert id).
struct OutboxPublisher: Sendable {
    let client: MQTTClient
    let database: StoreDatabase
    let logger: Logger
    /// How many messages are read and kept in flight at once.
    static let round = 1_000

    /// Publishes whenever `wakeups` says the outbox has grown, until the stream ends or the task is cancelled.
    func run(wakeups: AsyncStream<Void>) async throws {
        for await _ in wakeups {
            try await drain()
        }
    }

    /// Publishes everything pending. Each round is queued before the previous round's acknowledgements are
    /// awaited and forgotten, so the connection stays busy while the database is written.
    func drain() async throws {
        var lastQueued: Int64 = 0
        var awaiting: [(seq: Int64, publication: MQTTPublication)] = []
        while !Task.isCancelled {
            do {
                let pending = try database.pendingPublications(after: lastQueued, limit: Self.round)
                // Queued one after another, so they leave in order; acknowledged in any order.
                let sent = try pending.map { message in
                    (message.seq, try client.send(message.payload, to: message.topic, qos: .atLeastOnce, retain: message.retain))
                }
                if let last = pending.last { lastQueued = last.seq }
                try await acknowledge(awaiting)
                awaiting = sent
                if pending.isEmpty { return }
            } catch MQTTError.notConnected {
                // Reconnecting: start over from the oldest unacknowledged message once back.
                logger.notice("broker connection lost while publishing; will resend after reconnecting")
                try await waitUntilConnected()
                lastQueued = 0
                awaiting = []
            }
        }
    }

    /// Waits for each acknowledgement, then forgets those messages in one transaction.
    private func acknowledge(_ publications: [(seq: Int64, publication: MQTTPublication)]) async throws {
        guard !publications.isEmpty else { return }
        var acknowledged: [Int64] = []
        acknowledged.reserveCapacity(publications.count)
        for (seq, publication) in publications {
            do {
                try await publication.acknowledged()
            } catch MQTTError.publishRefused(let topic, let code, let reason) {
                // Retrying cannot help; keep it from blocking the rest.
                logger.error("the broker refused a publish; dropping it", metadata: ["topic": "\(topic)", "reason": "\(code) \(reason)"])
            }
            acknowledged.append(seq)
        }
        try database.markPublished(acknowledged)
    }

    private func waitUntilConnected() async throws {
        while !client.isConnected {
            try Task.checkCancellation()
            try await ContinuousClock().sleep(for: .milliseconds(100))
        }
    }
}
