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

/// Receives each incoming message synchronously on libmosquitto's network thread, before the client
/// acknowledges it to the broker: libmosquitto writes the PUBACK of a QoS 1 message only after the
/// message callback returns. A journal that durably records the message therefore never loses one the
/// broker considers delivered.
///
/// Keep it short: a local write, no network I/O, no waiting on Swift concurrency.
public protocol MQTTInboundJournal: Sendable {
    /// Records `message`; called once per delivery, in arrival order.
    /// - Returns: ``MQTTInboundDisposition/refused`` when it could not be recorded: the client then drops the
    ///   connection before acknowledging it.
    func record(_ message: MQTTMessage) -> MQTTInboundDisposition
}

/// What an ``MQTTInboundJournal`` did with a message.
public enum MQTTInboundDisposition: Sendable, Hashable {
    /// Recorded: the client acknowledges it to the broker and hands it to its message streams.
    case recorded
    /// Not recorded (the journal cannot write): the client closes the connection at once, so the acknowledgement
    /// is never written and a persistent session keeps the message (and every later one) on the broker, which
    /// delivers it again on the next connection. The client then waits for ``MQTTClient/allowReconnect()``.
    case refused
}
