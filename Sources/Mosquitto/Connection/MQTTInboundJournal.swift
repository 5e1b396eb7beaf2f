/// Receives the incoming messages synchronously on the client's network thread, before the client acknowledges
/// them to the broker. The thread runs libmosquitto's read and write phases itself: it reads what has arrived
/// (libmosquitto queues each QoS 1 message's PUBACK as it reads it), hands those messages to the journal as one
/// batch, and only then writes what is queued. A journal that durably records the messages therefore never loses
/// one the broker considers delivered, and may commit a whole burst in one transaction.
///
/// A narrow protocol, for a narrow crossing: the network thread calls ``record(batch:number:)`` once per read phase,
/// and ``confirmed(throughBatch:)`` once per probe the broker answers, and nothing else; ``confirmationProbe`` is read
/// once, when the client is made. Keep both calls short: a local write, no network I/O, no waiting on Swift
/// concurrency.
public protocol MQTTInboundJournal: Sendable {
    /// Records the messages of one read, in arrival order, before any of their acknowledgements is written; a journal
    /// that can commit them together (one transaction) does so. `number` counts the batches the client has had
    /// recorded whole, this one included (1, 2, 3, … over the client's life), for ``confirmed(throughBatch:)``.
    /// - Returns: One disposition per message, in the same order (a missing one counts as refused). One refusal drops
    ///   the connection before any acknowledgement of the batch is written; the recorded messages of the batch still
    ///   reach the message streams, and the broker delivers them all again on the next connection.
    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition]

    /// A topic filter the client unsubscribes from after writing the acknowledgements of each batch recorded whole: a
    /// probe. The broker answers it (UNSUBACK) only on a connection that still holds the session, after it has read
    /// the acknowledgements written before it. `nil` (the default): no probe is sent. Use a filter nothing subscribes
    /// to. Read once, when the client is made.
    var confirmationProbe: String? { get }

    /// The broker answered the probe written after the acknowledgements of batch `number`: it took the acknowledgements
    /// of that batch, and of every earlier one, on a connection that held the session — so it will not deliver those
    /// messages to anybody again. Called on the network thread, in order, never after the connection was lost (a
    /// probe unanswered when it is lost is never answered). The default does nothing.
    func confirmed(throughBatch number: UInt64)
}

extension MQTTInboundJournal {
    /// No probe.
    public var confirmationProbe: String? { nil }

    /// Does nothing.
    public func confirmed(throughBatch number: UInt64) {}
}

/// What an ``MQTTInboundJournal`` did with a message.
public enum MQTTInboundDisposition: Sendable, Hashable {
    /// Recorded: the client acknowledges it to the broker and hands it to its message streams.
    case recorded
    /// Not recorded (the journal cannot write): the client ends the connection at once, so the acknowledgement
    /// (and those of the other messages of its batch) is never written and a persistent session keeps the message
    /// (and every later one) on the broker, which delivers it again on the next connection. The client then waits for ``MQTTClient/allowReconnect()``.
    case refused
}
