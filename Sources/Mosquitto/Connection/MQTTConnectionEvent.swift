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
