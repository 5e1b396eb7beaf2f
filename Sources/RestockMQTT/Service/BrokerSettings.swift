import RestockPipeline
import Mosquitto

/// How every part of the service reaches the broker: address, credentials, TLS, protocol version.
public struct BrokerSettings: Sendable {
    /// The broker tried first.
    public var broker: BrokerAddress
    /// The other brokers of a cluster, tried in turn after ``broker`` (docs/operations.md, "Past one broker").
    public var fallbackBrokers: [BrokerAddress] = []
    /// The user name, if the broker wants one.
    public var username: String?
    /// The password, if the broker wants one.
    public var password: String?
    /// TLS files for an `mqtts://` broker.
    public var tls: MQTTTLSConfiguration?
    /// MQTT 5 (the default) or 3.1.1.
    public var protocolVersion: MQTTProtocolVersion

    /// Settings for `broker`.
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

    /// Settings from a broker URL, `mqtt://host:port` or `mqtts://host:port`, which may carry credentials as
    /// `mqtt://user:password@host:port` (percent-encoded), or from a comma-separated list of such URLs, the brokers of
    /// one cluster in the order they are tried. `username` and `password`, when given, win over the URLs'.
    /// - Throws: ``MQTTError/invalidConfiguration(_:)`` naming what is wrong with the URL or the list.
    public init(
        url: String, username: String? = nil, password: String? = nil, tls: MQTTTLSConfiguration? = nil,
        protocolVersion: MQTTProtocolVersion = .v5
    ) throws(MQTTError) {
        let list = try BrokerList(url)
        self.init(
            broker: list.addresses[0], username: username ?? list.username, password: password ?? list.password, tls: tls,
            protocolVersion: protocolVersion)
        self.fallbackBrokers = Array(list.addresses.dropFirst())
    }

    /// Every broker, in the order they are tried.
    public var brokers: [BrokerAddress] { [broker] + fallbackBrokers }

    /// A configuration for an ``MQTTClient`` of this broker, with these credentials and TLS settings, and up to
    /// 1,000 QoS 1 messages in flight.
    public func configuration(clientID: String, session: MQTTSession, will: MQTTWill? = nil) -> MQTTConfiguration {
        MQTTConfiguration(
            broker: broker, clientID: clientID, session: session, protocolVersion: protocolVersion,
            username: username, password: password, tls: broker.usesTLS ? tls : nil, will: will,
            maxInflight: 1_000).withFallbacks(fallbackBrokers)
    }
}

extension BrokerSettings: CustomStringConvertible, CustomDebugStringConvertible {
    /// The settings with the password left out, for logs (a service's description is logged at debug level).
    public var description: String {
        "BrokerSettings(broker: \(brokers.map(\.description).joined(separator: ",")), username: \(username ?? "none"), password: \(password == nil ? "none" : "(set, not shown)"), "
            + "tls: \(tls == nil ? "off" : "on"), protocol: \(protocolVersion))"
    }
    public var debugDescription: String { description }
}

extension MQTTConfiguration {
    fileprivate func withFallbacks(_ brokers: [BrokerAddress]) -> MQTTConfiguration {
        var configuration = self
        configuration.fallbackBrokers = brokers
        return configuration
    }
}
