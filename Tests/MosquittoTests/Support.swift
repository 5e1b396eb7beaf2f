import Foundation
import Mosquitto
import RestockTestSupport
import Deadlines

/// A name unique to this test run, for client ids and topics, so tests never see each other's traffic.
func uniqueName(_ prefix: String = "t") -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// A client of `broker`, connected.
func connectedClient(
    to broker: MosquittoBroker, clientID: String = uniqueName("client"), session: MQTTSession = .clean,
    protocolVersion: MQTTProtocolVersion = .v5, username: String? = nil, password: String? = nil,
    will: MQTTWill? = nil
) async throws -> MQTTClient {
    let client = try MQTTClient(
        configuration: MQTTConfiguration(
            broker: try BrokerAddress(url: broker.url), clientID: clientID, session: session,
            protocolVersion: protocolVersion, username: username, password: password, will: will))
    try await client.connect()
    return client
}

/// The first `count` messages of `stream`, or a deadline error.
func first(
    _ count: Int, of stream: AsyncStream<MQTTMessage>, within seconds: Double = 20
) async throws -> [MQTTMessage] {
    try await withDeadline(seconds, waitingFor: "\(count) message(s)") {
        var received: [MQTTMessage] = []
        for await message in stream {
            received.append(message)
            if received.count == count { break }
        }
        return received
    }
}

/// Waits for a `.connected` event on `events`.
func nextConnection(on events: AsyncStream<MQTTConnectionEvent>, within seconds: Double = 30) async throws -> Bool {
    try await withDeadline(seconds, waitingFor: "a reconnection") {
        for await event in events {
            if case .connected(let sessionPresent) = event { return sessionPresent }
        }
        throw DeadlineExceeded(what: "a reconnection (stream ended)", seconds: seconds)
    }
}

/// Runs `operation` until it stops failing with ``MQTTError/notConnected`` (the client is reconnecting),
/// or the deadline passes.
func retryingWhileReconnecting<T: Sendable>(
    within seconds: Double = 20, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(seconds, waitingFor: "the client to reconnect") {
        while true {
            do { return try await operation() } catch MQTTError.notConnected {
                try await ContinuousClock().sleep(for: .milliseconds(20))  // poll interval, bounded by the deadline
            }
        }
    }
}
