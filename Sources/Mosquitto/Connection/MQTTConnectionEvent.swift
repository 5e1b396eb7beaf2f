/// A change in the client's connection, as seen on ``MQTTClient/connectionEvents()``.
public enum MQTTConnectionEvent: Sendable, Hashable {
    /// Connected (first time or again). `sessionPresent` tells whether the broker still had the session;
    /// when it did not, the client has made every active subscription again.
    case connected(sessionPresent: Bool)
    /// The connection was lost; the client keeps trying to reconnect (see ``MQTTReconnectPolicy``).
    case connectionLost(reason: String)
    /// The client was disconnected by its user and will not reconnect.
    case disconnected
}

/// Receives the incoming messages synchronously on the client's network thread, before the client acknowledges
/// them to the broker. The thread runs libmosquitto's read and write phases itself: it reads what has arrived
/// (libmosquitto queues each QoS 1 message's PUBACK as it reads it), hands those messages to the journal as one
/// batch, and only then writes what is queued. A journal that durably records the messages therefore never loses
/// one the broker considers delivered, and may commit a whole burst in one transaction.
///
/// Keep it short: a local write, no network I/O, no waiting on Swift concurrency.
public protocol MQTTInboundJournal: Sendable {
    /// Records `message`; called once per delivery, in arrival order (by the default ``record(batch:)``).
    /// - Returns: ``MQTTInboundDisposition/refused`` when it could not be recorded: the client then drops the
    ///   connection before acknowledging it.
    func record(_ message: MQTTMessage) -> MQTTInboundDisposition

    /// Records the messages of one read, in arrival order, before any of their acknowledgements is written. The
    /// default calls ``record(_:)`` for each; a journal that can commit them together (one transaction) does so here.
    /// - Returns: One disposition per message, in the same order (a missing one counts as refused). One refusal drops
    ///   the connection before any acknowledgement of the batch is written; the recorded messages of the batch still
    ///   reach the message streams, and the broker delivers them all again on the next connection.
    func record(batch messages: [MQTTMessage]) -> [MQTTInboundDisposition]

    /// Records the messages of one read as ``record(batch:)`` does; `number` counts the batches the client has had
    /// recorded whole, this one included (1, 2, 3, … over the client's life), for ``confirmed(throughBatch:)``. The
    /// default calls ``record(batch:)``.
    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition]

    /// A topic filter the client unsubscribes from after writing the acknowledgements of each batch recorded whole: a
    /// probe. The broker answers it (UNSUBACK) only on a connection that still holds the session, after it has read
    /// the acknowledgements written before it. `nil` (the default): no probe is sent. Use a filter nothing subscribes to.
    var confirmationProbe: String? { get }

    /// The broker answered the probe written after the acknowledgements of batch `number`: it took the acknowledgements
    /// of that batch, and of every earlier one, on a connection that held the session — so it will not deliver those
    /// messages to anybody again. Called on the network thread, in order, never after the connection was lost (a
    /// probe unanswered when it is lost is never answered). The default does nothing.
    func confirmed(throughBatch number: UInt64)
}

extension MQTTInboundJournal {
    /// Records each message with ``record(_:)``, in order.
    public func record(batch messages: [MQTTMessage]) -> [MQTTInboundDisposition] {
        messages.map { record($0) }
    }

    /// Calls ``record(batch:)``.
    public func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        record(batch: messages)
    }

    /// No probe.
    public var confirmationProbe: String? { nil }

    /// Does nothing.
    public func confirmed(throughBatch number: UInt64) {}
}

/// What an ``MQTTInboundJournal`` did with a message.
public enum MQTTInboundDisposition: Sendable, Hashable {
    /// Recorded: the client acknowledges it to the broker and hands it to its message streams.
    case recorded
    /// Not recorded (the journal cannot write): the client closes the connection at once, so the acknowledgement
    /// (and those of the other messages of its batch) is never written and a persistent session keeps the message
    /// (and every later one) on the broker, which delivers it again on the next connection. The client then waits for ``MQTTClient/allowReconnect()``.
    case refused
}
