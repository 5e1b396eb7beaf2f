import RestockPipeline
import Mosquitto

/// How every part of the service reaches the broker: address, credentials, TLS, protocol version.
public struct BrokerSettings: Sendable {
    /// The broker.
    public var broker: BrokerAddress
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
    /// `mqtt://user:password@host:port` (percent-encoded). `username` and `password`, when given, win over
    /// the URL's.
    /// - Throws: ``MQTTError/invalidConfiguration(_:)`` naming what is wrong with the URL.
    public init(
        url: String, username: String? = nil, password: String? = nil, tls: MQTTTLSConfiguration? = nil,
        protocolVersion: MQTTProtocolVersion = .v5
    ) throws(MQTTError) {
        var address = url
        var credentials: (user: String?, password: String?) = (nil, nil)
        if let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@") {
            let userInfo = url[scheme.upperBound..<at]
            address = String(url[..<scheme.upperBound] + url[url.index(after: at)...])
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = parts[0].removingPercentEncoding, !user.isEmpty,
                let secret = parts.count > 1 ? parts[1].removingPercentEncoding : ""
            else {
                throw .invalidConfiguration("the broker URL has a bad user name or password before @ (percent-encode special characters)")
            }
            credentials = (user, parts.count > 1 ? secret : nil)
        }
        self.init(
            broker: try BrokerAddress(url: address), username: username ?? credentials.user,
            password: password ?? credentials.password, tls: tls, protocolVersion: protocolVersion)
    }

    /// A configuration for an ``MQTTClient`` of this broker, with these credentials and TLS settings, and up to
    /// 1,000 QoS 1 messages in flight.
    public func configuration(clientID: String, session: MQTTSession, will: MQTTWill? = nil) -> MQTTConfiguration {
        MQTTConfiguration(
            broker: broker, clientID: clientID, session: session, protocolVersion: protocolVersion,
            username: username, password: password, tls: broker.usesTLS ? tls : nil, will: will,
            maxInflight: 1_000)
    }
}

extension BrokerSettings: CustomStringConvertible, CustomDebugStringConvertible {
    /// The settings with the password left out, for logs (a service's description is logged at debug level).
    public var description: String {
        "BrokerSettings(broker: \(broker), username: \(username ?? "none"), password: \(password == nil ? "none" : "(set, not shown)"), "
            + "tls: \(tls == nil ? "off" : "on"), protocol: \(protocolVersion))"
    }
    public var debugDescription: String { description }
}
