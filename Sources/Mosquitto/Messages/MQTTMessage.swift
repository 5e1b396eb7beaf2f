/// A message received from the broker, copied out of libmosquitto's buffers.
public struct MQTTMessage: Sendable, Hashable {
    /// The topic it was published on.
    public let topic: String
    /// The payload bytes.
    public let payload: [UInt8]
    /// The QoS it was delivered at.
    public let qos: MQTTQoS
    /// Whether it came from the broker's retained store (sent at subscribe time).
    public let retain: Bool
    /// MQTT v5 properties that came with it.
    public let properties: MQTTMessageProperties

    /// Creates a message (the client creates them; tests may too).
    public init(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool, properties: MQTTMessageProperties = .init()) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }

    /// The payload as a UTF-8 string, or `nil` when it is not valid UTF-8.
    public var payloadString: String? { String(validating: payload, as: UTF8.self) }
}

/// The MQTT v5 properties of a PUBLISH that this client reads and writes.
public struct MQTTMessageProperties: Sendable, Hashable {
    /// `content-type`, such as `application/json`.
    public var contentType: String?
    /// `response-topic`, for request/response.
    public var responseTopic: String?
    /// `correlation-data`, for request/response.
    public var correlationData: [UInt8]?
    /// `message-expiry-interval` in seconds.
    public var messageExpiryInterval: UInt32?
    /// User properties, in order.
    public var userProperties: [MQTTUserProperty]

    /// Creates properties; all empty by default.
    public init(
        contentType: String? = nil, responseTopic: String? = nil, correlationData: [UInt8]? = nil,
        messageExpiryInterval: UInt32? = nil, userProperties: [MQTTUserProperty] = []
    ) {
        self.contentType = contentType
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.messageExpiryInterval = messageExpiryInterval
        self.userProperties = userProperties
    }

    var isEmpty: Bool {
        contentType == nil && responseTopic == nil && correlationData == nil && messageExpiryInterval == nil
            && userProperties.isEmpty
    }
}

/// An MQTT v5 user property: a name and a value.
public struct MQTTUserProperty: Sendable, Hashable {
    /// The property's name.
    public var name: String
    /// The property's value.
    public var value: String
    /// Creates a user property.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
