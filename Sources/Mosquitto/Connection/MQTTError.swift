/// What went wrong in an MQTT operation. Every case has a human message (`description`).
public enum MQTTError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A topic name given to `publish` is not valid: empty, with a wildcard, a NUL, invalid UTF-8, or too long.
    case invalidTopic(String, reason: String)
    /// A topic filter given to `subscribe`, `unsubscribe` or `messages(matching:)` is not valid.
    case invalidTopicFilter(String, reason: String)
    /// The client id is not one a broker accepts (empty for a persistent session, too long, or not UTF-8).
    case invalidClientID(String, reason: String)
    /// The broker address or another setting is not usable.
    case invalidConfiguration(String)
    /// The connection to the broker failed once made (closed before its CONNACK, TLS failure, timeout), or the
    /// client could not start its network thread. A broker no TCP connection reaches is ``unreachable(_:)``.
    case connectionFailed(String)
    /// The broker answered the CONNECT with a refusal, such as bad credentials or not authorized.
    case connectionRefused(reasonCode: Int, reason: String)
    /// The operation needs a connection and the client has none, or was disconnected by its user.
    case notConnected
    /// The broker refused a publish (an MQTT v5 reason code of 0x80 or above, such as 0x87 not authorized).
    case publishRefused(topic: String, reasonCode: Int, reason: String)
    /// The broker refused a subscription (granted QoS 0x80 or above).
    case subscribeRefused(filter: String, reasonCode: Int, reason: String)
    /// The payload is larger than MQTT allows (256 MiB).
    case payloadTooLarge(Int)
    /// An operation did not finish within its deadline.
    case timedOut(String)
    /// libmosquitto returned an error code.
    case library(code: Int32, message: String)
    // Last, so that the cases before it keep their tags for code built against an earlier version.
    /// The client was used in a way its API does not allow, such as ``MQTTClient/connect()`` on a client that is
    /// connected or connecting, or one publication's ``MQTTPublication/acknowledged()`` awaited by two tasks at
    /// once. The client itself is unharmed; the call had no effect.
    case misuse(String)
    /// No broker given (one, or each of a list) took the TCP connection: refused, unresolvable or unreachable. The
    /// detail names each broker and what it said.
    case unreachable(String)

    /// A human message naming what went wrong.
    public var description: String {
        switch self {
        case .invalidTopic(let topic, let reason): "invalid topic \(Self.quoted(topic)): \(reason)"
        case .invalidTopicFilter(let filter, let reason): "invalid topic filter \(Self.quoted(filter)): \(reason)"
        case .invalidClientID(let id, let reason): "invalid client id \(Self.quoted(id)): \(reason)"
        case .invalidConfiguration(let detail): "invalid configuration: \(detail)"
        case .misuse(let detail): "misuse of the MQTT client: \(detail)"
        case .connectionFailed(let detail), .unreachable(let detail): "cannot connect to the broker: \(detail)"
        case .connectionRefused(let code, let reason):
            // 3.1.1: 4 bad user name or password, 5 not authorised; 5: 0x86 and 0x87 likewise.
            "the broker refused the connection: \(reason) (reason code \(code))"
                + ([4, 5, 134, 135].contains(code) ? "; check the user name and password" : "")
        case .notConnected: "not connected to the broker"
        case .publishRefused(let topic, let code, let reason):
            "the broker refused the publish to \(topic): \(reason) (reason code \(code))"
        case .subscribeRefused(let filter, let code, let reason):
            "the broker refused the subscription to \(filter): \(reason) (reason code \(code))"
        case .payloadTooLarge(let size): "payload of \(size) bytes is larger than MQTT allows"
        case .timedOut(let what): "timed out: \(what)"
        case .library(let code, let message): "libmosquitto error \(code): \(message)"
        }
    }

    static func quoted(_ text: String) -> String {
        String(reflecting: text.count > 80 ? String(text.prefix(80)) + "…" : text)
    }
}
