import Deadlines
import Logging
import Mosquitto
import RestockCore
import Synchronization

/// Publishes what the outbox holds, in commit order, and forgets each message once the broker has
/// acknowledged it. A batch of alerts is expanded here, alert by alert, and its progress recorded as its
/// rounds are acknowledged. After a crash, or a lost connection, whatever was not acknowledged goes out again
/// with the same payload (and the same alert id).
struct OutboxPublisher: Sendable {
    let client: MQTTClient
    let database: StoreDatabase
    let topics: RestockTopics
    let logger: Logger
    /// Set when the store stops: no new round is sent once it has passed.
    let stopping: ShutdownDeadline
    /// How many messages are read and kept in flight at once.
    static let round = 1_000
    /// How long a stopping store waits for the acknowledgements of what it has sent.
    static let acknowledgementGrace = 2.0

    /// Publishes whenever `wakeups` says the outbox has grown, until the stream ends or the task is cancelled.
    func run(wakeups: AsyncStream<Void>) async throws {
        for await _ in wakeups {
            try await drain()
        }
    }

    /// One message on its way, and where in the outbox it comes from.
    private struct Outgoing {
        let seq: Int64
        /// Its place in a batch of alerts, or `nil` for a message of its own.
        let index: Int?
        let topic: String
        let payload: [UInt8]
        let retain: Bool
    }

    /// Publishes everything pending. Each round is queued before the previous round's acknowledgements are
    /// awaited and recorded, so the connection stays busy while the database is written. Once the shutdown
    /// deadline has passed it sends nothing more, and records the acknowledgements of what it sent.
    func drain() async throws {
        while !Task.isCancelled, !stopping.hasPassed {
            let reader = OutboxReader(database: database, topics: topics, logger: logger)
            var awaiting: [(Outgoing, MQTTPublication)] = []
            do {
                while !Task.isCancelled {
                    if stopping.hasPassed {
                        let last = awaiting
                        _ = try? await withDeadline(Self.acknowledgementGrace) { try await acknowledge(last) }
                        return
                    }
                    let round = try await database.run { try reader.next(Self.round) }
                    // Queued one after another, so they leave in order; acknowledged in any order.
                    let sent = try round.map { message in
                        (message, try client.send(message.payload, to: message.topic, qos: .atLeastOnce, retain: message.retain))
                    }
                    try await acknowledge(awaiting)
                    awaiting = sent
                    if round.isEmpty { return }
                }
            } catch MQTTError.notConnected {
                // Reconnecting: start over from the oldest unacknowledged message once back.
                logger.notice("broker connection lost while publishing; will resend after reconnecting")
                try await waitUntilConnected()
            }
        }
    }

    /// Waits for each acknowledgement, then records them in one transaction: messages are forgotten, and each
    /// batch remembers how far it has been acknowledged (every earlier round was acknowledged before).
    private func acknowledge(_ publications: [(Outgoing, MQTTPublication)]) async throws {
        guard !publications.isEmpty else { return }
        var messages: [Int64] = []
        var batches: [(seq: Int64, sent: Int)] = []
        var interrupted: (any Error)?
        for (message, publication) in publications {
            do {
                try await publication.acknowledged()
            } catch MQTTError.publishRefused(let topic, let code, let reason) {
                // Retrying cannot help; keep it from blocking the rest.
                logger.error("the broker refused a publish; dropping it", metadata: ["topic": "\(topic)", "reason": "\(code) \(reason)"])
            } catch {
                // Stopped or disconnected: record what was acknowledged before it, so none of that is sent again.
                interrupted = error
                break
            }
            if let index = message.index {
                if batches.last?.seq == message.seq {
                    batches[batches.count - 1].sent = index + 1
                } else {
                    batches.append((message.seq, index + 1))
                }
            } else {
                messages.append(message.seq)
            }
        }
        try await database.run { [messages, batches] in try self.database.acknowledge(messages: messages, batches: batches) }
        if let interrupted { throw interrupted }
    }

    private func waitUntilConnected() async throws {
        while !client.isConnected, !stopping.hasPassed {
            try Task.checkCancellation()
            try await ContinuousClock().sleep(for: .milliseconds(100))
        }
    }

    /// Reads the outbox in order, a round at a time, expanding batches of alerts into their messages. Used
    /// on the store's SQLite thread (``StoreDatabase/run(_:)``), one round at a time.
    private final class OutboxReader: Sendable {
        let database: StoreDatabase
        let topics: RestockTopics
        let logger: Logger
        /// The last row taken whole, and the batch being taken with the index of its next alert.
        private let position = Mutex<(seq: Int64, batch: (seq: Int64, alerts: AlertBatch, next: Int)?)>((0, nil))

        init(database: StoreDatabase, topics: RestockTopics, logger: Logger) {
            self.database = database
            self.topics = topics
            self.logger = logger
        }

        /// Up to `limit` messages, following the last ones returned.
        func next(_ limit: Int) throws -> [Outgoing] {
            try position.withLock { position in try next(limit, from: &position.seq, &position.batch) }
        }

        private func next(_ limit: Int, from seq: inout Int64, _ batch: inout (seq: Int64, alerts: AlertBatch, next: Int)?) throws -> [Outgoing] {
            var round: [Outgoing] = []
            while round.count < limit {
                if let current = batch, current.next < current.alerts.count {
                    let end = min(current.alerts.count, current.next + limit - round.count)
                    for index in current.next..<end {
                        let alert = current.alerts.alert(index)
                        round.append(
                            Outgoing(seq: current.seq, index: index, topic: topics.alerts(alert.customer), payload: Array(alert.jsonData()), retain: false))
                    }
                    batch?.next = end
                    continue
                }
                let rows = try database.pendingPublications(after: seq, limit: limit - round.count)
                guard !rows.isEmpty else { break }
                for row in rows {
                    seq = row.seq
                    guard row.alertCount > 0 else {
                        round.append(Outgoing(seq: row.seq, index: nil, topic: row.topic, payload: row.payload, retain: row.retain))
                        continue
                    }
                    guard let alerts = AlertBatch(decoding: row.payload), alerts.count == row.alertCount else {
                        // Not written by this store: nothing to send, and it must not block the rest.
                        logger.error("dropping an unreadable batch of alerts from the outbox", metadata: ["seq": "\(row.seq)"])
                        try database.acknowledge(messages: [row.seq], batches: [])
                        continue
                    }
                    batch = (row.seq, alerts, row.sent)
                    break  // take its alerts, then read on after it
                }
            }
            return round
        }
    }
}
