/// How an ``MQTTClient`` connects: broker, identity, session, protocol, credentials, TLS, will and limits.
public struct MQTTConfiguration: Sendable {
    /// The broker to connect to first.
    public var broker: BrokerAddress
    /// Further brokers of one cluster, tried in turn after ``broker`` when it does not answer or its connection is
    /// lost (``brokers``). All use the same transport as ``broker``.
    public var fallbackBrokers: [BrokerAddress] = []
    /// The client id. A persistent session needs one; it must be unique on the broker.
    public var clientID: String
    /// A clean session, or a persistent one that the broker keeps while the client is away.
    public var session: MQTTSession
    /// MQTT v5 (the default) or 3.1.1.
    public var protocolVersion: MQTTProtocolVersion
    /// The keepalive interval, in seconds.
    public var keepAliveSeconds: Int
    /// The user name, if the broker wants one.
    public var username: String?
    /// The password, if the broker wants one.
    public var password: String?
    /// TLS settings; required for an `mqtts://` broker, where a `nil` means the system's CA certificates.
    public var tls: MQTTTLSConfiguration?
    /// The message the broker publishes when this client dies without disconnecting.
    public var will: MQTTWill?
    /// How many QoS 1 and 2 messages may be awaiting acknowledgement at once; more are queued.
    public var maxInflight: Int
    /// How long the client waits between attempts to reconnect after losing the connection (by default 200 ms,
    /// doubling up to 800 ms, with up to half of each wait taken off at random).
    public var reconnect: MQTTReconnectPolicy
    /// How long ``MQTTClient/connect()`` waits for the broker's answer.
    public var connectTimeout: Duration
    /// Whether the client reconnects by itself after a loss, or only once its owner allows it
    /// (``MQTTClient/allowReconnect()``): for a client that must not take its session back unless it still owns it.
    public var reconnection: MQTTReconnection = .automatic

    /// Creates a configuration.
    public init(
        broker: BrokerAddress, clientID: String, session: MQTTSession = .clean,
        protocolVersion: MQTTProtocolVersion = .v5, keepAliveSeconds: Int = 30, username: String? = nil,
        password: String? = nil, tls: MQTTTLSConfiguration? = nil, will: MQTTWill? = nil, maxInflight: Int = 100,
        reconnect: MQTTReconnectPolicy = .default, connectTimeout: Duration = .seconds(10)
    ) {
        self.broker = broker
        self.clientID = clientID
        self.session = session
        self.protocolVersion = protocolVersion
        self.keepAliveSeconds = keepAliveSeconds
        self.username = username
        self.password = password
        self.tls = tls
        self.will = will
        self.maxInflight = maxInflight
        self.reconnect = reconnect
        self.connectTimeout = connectTimeout
    }

    /// Every broker the client may use, in the order it tries them: ``broker``, then ``fallbackBrokers``.
    public var brokers: [BrokerAddress] { [broker] + fallbackBrokers }

    /// Checks everything that can be checked before connecting.
    /// - Throws: ``MQTTError/invalidClientID(_:reason:)`` or ``MQTTError/invalidConfiguration(_:)``.
    public func validate() throws(MQTTError) {
        if clientID.isEmpty, session.isPersistent {
            throw .invalidClientID(clientID, reason: "a persistent session needs a client id")
        }
        if clientID.utf8.count > 65_535 { throw .invalidClientID(clientID, reason: "it is longer than 65,535 bytes") }
        if let problem = TopicRules.characterProblem(in: clientID) { throw .invalidClientID(clientID, reason: problem) }
        guard (0...65_535).contains(keepAliveSeconds), keepAliveSeconds == 0 || keepAliveSeconds >= 5 else {
            throw .invalidConfiguration("keepalive must be 0 or 5 to 65535 seconds, not \(keepAliveSeconds)")
        }
        guard (1...65_535).contains(maxInflight) else {
            throw .invalidConfiguration("maxInflight must be 1 to 65535, not \(maxInflight)")
        }
        try reconnect.validate()
        if password != nil, username == nil { throw .invalidConfiguration("a password needs a username") }
        // libmosquitto said "Invalid function arguments provided" of a longer user name, "Malformed UTF-8" of a newline
        // in one, and sent a longer password for the broker to drop as a protocol error (found by an outside trial).
        if let username {
            if username.utf8.count > 65_535 { throw .invalidConfiguration("the user name is longer than 65,535 bytes, MQTT's limit") }
            if let problem = TopicRules.characterProblem(in: username) { throw .invalidConfiguration("the user name is not one MQTT takes: \(problem)") }
        }
        if let password, password.utf8.count > 65_535 { throw .invalidConfiguration("the password is longer than 65,535 bytes, MQTT's limit") }
        if fallbackBrokers.contains(where: { $0.usesTLS != broker.usesTLS }) {
            throw .invalidConfiguration("the broker list mixes mqtt:// and mqtts://: use one scheme for every broker")
        }
        if tls != nil, !broker.usesTLS { throw .invalidConfiguration("TLS files are given but the broker URL is mqtt://, not mqtts://") }
        if let will, will.qos > .atMostOnce, will.payload.count > 65_535 * 4 {
            throw .invalidConfiguration("the will payload is too large")
        }
    }
}

/// Whether a client that lost its connection reconnects by itself.
public enum MQTTReconnection: Sendable, Hashable {
    /// By ``MQTTReconnectPolicy``, as soon as it may.
    case automatic
    /// Only after its owner calls ``MQTTClient/allowReconnect()`` (or the connection was never made); until then it
    /// stays disconnected, and ``MQTTClient/disconnect()`` ends it.
    case whenAllowed
}

/// The session a client asks the broker for.
public enum MQTTSession: Sendable, Hashable {
    /// Start afresh; the broker forgets the client when it disconnects.
    case clean
    /// Keep subscriptions and queued QoS 1/2 messages while the client is away, for `expirySeconds`
    /// (MQTT v5's session expiry; 3.1.1 keeps the session until a clean connect).
    case persistent(expirySeconds: UInt32)

    /// A persistent session kept for a week.
    public static let persistent = MQTTSession.persistent(expirySeconds: 7 * 24 * 3600)

    /// Whether the broker keeps the session.
    public var isPersistent: Bool {
        if case .persistent = self { return true }
        return false
    }
}

/// The MQTT protocol version.
public enum MQTTProtocolVersion: Sendable, Hashable {
    /// MQTT 3.1.1.
    case v311
    /// MQTT 5, the default: reason codes, properties, session expiry.
    case v5
}

/// TLS settings. The broker's certificate is verified against `caFile`, including its host name.
public struct MQTTTLSConfiguration: Sendable, Hashable {
    /// PEM file of the certificate authorities to trust; `nil` trusts the system's.
    public var caFile: String?
    /// PEM client certificate, for brokers that require one.
    public var certificateFile: String?
    /// PEM key of the client certificate.
    public var keyFile: String?
    /// Whether the broker's host name must match its certificate. On by default; turn off only in tests.
    public var verifyHostname: Bool

    /// Creates TLS settings.
    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, verifyHostname: Bool = true) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.verifyHostname = verifyHostname
    }
}

/// A last will: what the broker publishes for a client that dies without disconnecting.
public struct MQTTWill: Sendable, Hashable {
    /// The topic the broker publishes it on.
    public var topic: MQTTTopic
    /// The payload.
    public var payload: [UInt8]
    /// The QoS it is published with.
    public var qos: MQTTQoS
    /// Whether the broker keeps it as the topic's retained message.
    public var retain: Bool

    /// Creates a will.
    public init(topic: MQTTTopic, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}

extension MQTTConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// The configuration with the password left out, for logs.
    public var description: String {
        "MQTTConfiguration(broker: \(broker), clientID: \(clientID), username: \(username ?? "none"), "
            + "password: \(password == nil ? "none" : "(set, not shown)"), keepalive: \(keepAliveSeconds) s)"
    }
    public var debugDescription: String { description }
}
