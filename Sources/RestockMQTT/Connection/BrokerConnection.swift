import Mosquitto

/// What the store service and the store's clients need of one connection to the broker: the seam between them and
/// libmosquitto (docs/architecture.md, "The seams"). ``MQTTClient`` is the real one (through ``MosquittoConnector``);
/// the test support has one in memory, so takeover, draining, stage failure and reconnection are tested in
/// milliseconds without a broker.
package protocol BrokerConnection: Sendable {
    /// Connects and waits for the broker's answer; from then on the connection comes back by itself after a loss
    /// (or when allowed: ``allowReconnect()``). Returns whether the broker still had the session.
    @discardableResult
    func connect() async throws -> Bool

    /// Disconnects cleanly (no will) and stops reconnecting; waiting operations fail, streams end.
    func disconnect() async

    /// Ends the connection without DISCONNECT (the broker publishes the will, after everything sent before) and stops
    /// reconnecting; waiting operations fail, streams end.
    func abandon() async

    /// Lets a connection made with ``MQTTReconnection/whenAllowed``, or dropped by its journal, connect again.
    func allowReconnect()

    /// Whether it is connected right now.
    var isConnected: Bool { get }

    /// How many connections the broker has accepted since it was made: when it changes, the connection was made again.
    var connectionCount: UInt64 { get }

    /// Connection changes from now on.
    func connectionEvents() -> AsyncStream<MQTTConnectionEvent>

    /// The incoming messages whose topic matches `filter`, from now on.
    func messages(matching filter: String) throws -> AsyncStream<MQTTMessage>

    /// Subscribes and waits for the broker's answer.
    func subscribe(to filter: String, qos: MQTTQoS, options: MQTTSubscriptionOptions) async throws

    /// Unsubscribes and waits for the broker's answer.
    func unsubscribe(from filter: String) async throws

    /// Queues a QoS 1 message and returns at once; messages queued one after another leave in that order.
    func send(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement

    /// ``send(_:to:retain:)`` with MQTT 5 properties (a message expiry interval, correlation data): ignored under MQTT
    /// 3.1.1, and by a connection that has none (the default).
    func send(_ payload: [UInt8], to topic: String, retain: Bool, properties: MQTTMessageProperties) throws -> BrokerAcknowledgement

    /// Sends a QoS 0 message now, or fails with ``MQTTError/notConnected`` while the connection is down: never queued,
    /// never sent again after a reconnect. For what is stale once the connection was lost (the store's heartbeat).
    func sendNow(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement

    /// The broker (its URL) this connection is on, or tries or last tried; `nil` when it cannot say.
    var broker: String? { get }

    /// Makes sure the broker keeps a persistent session for this connection's client id, subscribed to `filter`,
    /// without taking anything it holds; the connection is then disconnected. Returns whether the session existed.
    func prepareSession(subscribingTo filter: String) async throws -> Bool
}

extension BrokerConnection {
    package var broker: String? { nil }

    package func send(_ payload: [UInt8], to topic: String, retain: Bool, properties: MQTTMessageProperties) throws -> BrokerAcknowledgement {
        try send(payload, to: topic, retain: retain)
    }

    /// Publishes a QoS 1 message and waits for the broker's acknowledgement.
    package func publish(_ payload: [UInt8], to topic: String, retain: Bool = false) async throws {
        try await send(payload, to: topic, retain: retain).acknowledged()
    }

    /// Subscribes at QoS 1 with the default options.
    package func subscribe(to filter: String) async throws {
        try await subscribe(to: filter, qos: .atLeastOnce, options: .init())
    }
}

/// The broker's acknowledgement of one message queued by ``BrokerConnection/send(_:to:retain:)``.
package struct BrokerAcknowledgement: Sendable {
    private let wait: @Sendable () async throws -> Void

    /// An acknowledgement that `wait` waits for.
    package init(_ wait: @escaping @Sendable () async throws -> Void) { self.wait = wait }

    /// Waits for the broker's acknowledgement.
    /// - Throws: ``MQTTError/publishRefused(topic:reasonCode:reason:)`` when the broker refuses it;
    ///   ``MQTTError/notConnected`` when the connection is closed before the answer.
    package func acknowledged() async throws { try await wait() }
}

/// Makes the connections of one broker: its address, credentials and TLS settings are the connector's.
package protocol BrokerConnector: Sendable {
    /// A connection with client id `clientID`, not yet connected.
    /// - Parameters:
    ///   - will: What the broker publishes when the connection is lost without a clean disconnect.
    ///   - reconnection: Whether it comes back by itself after a loss, or only when allowed.
    ///   - journal: Told of each incoming message before it is acknowledged (the store's session).
    ///   - writeGate: Asked whether this process may still write, after the connection's thread was held up and before
    ///     every reconnect (the store's lease: a frozen store, resumed, sends nothing).
    func connection(
        clientID: String, session: MQTTSession, will: MQTTWill?, reconnection: MQTTReconnection, journal: (any MQTTInboundJournal)?,
        writeGate: (any MQTTWriteGate)?
    ) throws -> any BrokerConnection
}

extension BrokerConnector {
    /// A connection with a clean session, no will and no journal, that reconnects by itself.
    package func connection(clientID: String, session: MQTTSession = .clean) throws -> any BrokerConnection {
        try connection(clientID: clientID, session: session, will: nil, reconnection: .automatic, journal: nil, writeGate: nil)
    }
}
