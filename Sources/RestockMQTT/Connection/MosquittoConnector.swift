import Logging
import Mosquitto

/// The real ``BrokerConnector``: libmosquitto's ``MQTTClient``s for one broker's ``BrokerSettings``.
package struct MosquittoConnector: BrokerConnector {
    let settings: BrokerSettings
    let logger: Logger

    package init(settings: BrokerSettings, logger: Logger = Logger(label: "mosquitto", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.settings = settings
        self.logger = logger
    }

    package func connection(
        clientID: String, session: MQTTSession, will: MQTTWill?, reconnection: MQTTReconnection, journal: (any MQTTInboundJournal)?,
        writeGate: (any MQTTWriteGate)?
    ) throws -> any BrokerConnection {
        var configuration = settings.configuration(clientID: clientID, session: session, will: will)
        configuration.reconnection = reconnection
        return MosquittoConnection(client: try MQTTClient(configuration: configuration, journal: journal, writeGate: writeGate, logger: logger))
    }
}

/// An ``MQTTClient`` as a ``BrokerConnection``.
struct MosquittoConnection: BrokerConnection {
    let client: MQTTClient

    func connect() async throws -> Bool { try await client.connect() }
    func disconnect() async { await client.disconnect() }
    func abandon() async { await client.abandon() }
    func allowReconnect() { client.allowReconnect() }
    var isConnected: Bool { client.isConnected }
    var connectionCount: UInt64 { client.connectionCount }
    var broker: String? { client.currentBroker.description }
    func connectionEvents() -> AsyncStream<MQTTConnectionEvent> { client.connectionEvents() }
    func messages(matching filter: String) throws -> AsyncStream<MQTTMessage> { try client.messages(matching: filter) }

    func subscribe(to filter: String, qos: MQTTQoS, options: MQTTSubscriptionOptions) async throws {
        _ = try await client.subscribe(to: filter, qos: qos, options: options)
    }

    func unsubscribe(from filter: String) async throws { try await client.unsubscribe(from: filter) }

    func send(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement {
        try send(payload, to: topic, retain: retain, properties: MQTTMessageProperties())
    }

    func send(_ payload: [UInt8], to topic: String, retain: Bool, properties: MQTTMessageProperties) throws -> BrokerAcknowledgement {
        let publication = try client.send(payload, to: topic, qos: .atLeastOnce, retain: retain, properties: properties)
        return BrokerAcknowledgement { try await publication.acknowledged() }
    }

    func sendNow(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement {
        let publication = try client.send(payload, to: topic, qos: .atMostOnce, retain: retain)
        return BrokerAcknowledgement { try await publication.acknowledged() }
    }

    func prepareSession(subscribingTo filter: String) async throws -> Bool {
        try await client.prepareSession(subscribingTo: filter, qos: .atLeastOnce)
    }
}
