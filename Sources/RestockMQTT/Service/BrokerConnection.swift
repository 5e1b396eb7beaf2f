import Mosquitto

/// How every part of the service reaches the broker: address, credentials, TLS, protocol version.
public struct BrokerConnection: Sendable {
    public var broker: BrokerAddress
    public var username: String?
    public var password: String?
    public var tls: MQTTTLSConfiguration?
    public var protocolVersion: MQTTProtocolVersion

    public init(
        broker: BrokerAddress, username: String? = nil, password: String? = nil, tls: MQTTTLSConfiguration? = nil,
        protocolVersion: MQTTProtocolVersion = .v5
    ) {
        self.broker = broker
        self.username = username
        self.password = password
        self.tls = tls
        self.protocolVersion = protocolVersion
    }

    /// A client configuration for this broker.
    func configuration(clientID: String, session: MQTTSession, will: MQTTWill? = nil) -> MQTTConfiguration {
        MQTTConfiguration(
            broker: broker, clientID: clientID, session: session, protocolVersion: protocolVersion,
            username: username, password: password, tls: broker.usesTLS ? tls : nil, will: will,
            maxInflight: 1_000, reconnectDelay: (1, 10))
    }
}
