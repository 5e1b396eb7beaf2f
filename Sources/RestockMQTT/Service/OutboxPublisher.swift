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

    /// Publishes everything pending.
    func drain() async throws {
        var lastSent: Int64 = 0
        while !Task.isCancelled {
            let pending = try database.pendingPublications(after: lastSent, limit: Self.round)
            guard let last = pending.last else { return }
            do {
                // Queued one after another, so they leave in order; acknowledged in any order.
                let publications = try pending.map { message in
                    (message.seq, try client.send(message.payload, to: message.topic, qos: .atLeastOnce, retain: message.retain))
                }
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
                lastSent = last.seq
            } catch MQTTError.notConnected {
                // Reconnecting: start over from the oldest unacknowledged message once back.
                logger.notice("broker connection lost while publishing; will resend after reconnecting")
                try await waitUntilConnected()
                lastSent = 0
            }
        }
    }

    private func waitUntilConnected() async throws {
        while !client.isConnected {
            try Task.checkCancellation()
            try await ContinuousClock().sleep(for: .milliseconds(100))
        }
    }
}
