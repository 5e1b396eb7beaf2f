extension MQTTClient {
    /// The largest payload MQTT allows.
    public static let maximumPayloadSize = 268_435_455

    /// Publishes a message and waits until the broker has acknowledged it (QoS 1 and 2) or it has been
    /// written (QoS 0). While the connection is down, QoS 1 and 2 messages wait and are sent on reconnect.
    /// - Parameters:
    ///   - payload: The bytes to send.
    ///   - topic: A topic name: no wildcards, no NUL, not empty.
    ///   - qos: The quality of service.
    ///   - retain: Whether the broker keeps it as the topic's retained message (an empty payload clears it).
    ///   - properties: MQTT v5 properties; ignored under 3.1.1.
    /// - Throws: ``MQTTError/invalidTopic(_:reason:)`` before anything is sent; ``MQTTError/publishRefused(topic:reasonCode:reason:)``
    ///   when the broker refuses it (v5); ``MQTTError/notConnected``.
    public func publish(
        _ payload: [UInt8], to topic: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTMessageProperties = .init()
    ) async throws {
        try await send(payload, to: topic, qos: qos, retain: retain, properties: properties).acknowledged()
    }

    /// Publishes UTF-8 text. See ``publish(_:to:qos:retain:properties:)``.
    public func publish(
        _ text: String, to topic: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTMessageProperties = .init()
    ) async throws {
        try await publish(Array(text.utf8), to: topic, qos: qos, retain: retain, properties: properties)
    }

    /// Queues a message for publishing and returns at once; await ``MQTTPublication/acknowledged()`` for
    /// the broker's answer. Messages queued one after another go out in that order, so a caller can keep
    /// many in flight and still keep their order.
    ///
    /// While the connection is down (the client reconnecting), a QoS 1 or 2 message is queued all the same:
    /// libmosquitto sends it after reconnecting, and its publication is acknowledged then. Only a QoS 0 message
    /// fails with ``MQTTError/notConnected`` then.
    /// - Throws: As ``publish(_:to:qos:retain:properties:)``, for what can be known before sending;
    ///   ``MQTTError/notConnected`` before ``connect()`` or after ``disconnect()``.
    public func send(
        _ payload: [UInt8], to topic: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTMessageProperties = .init()
    ) throws(MQTTError) -> MQTTPublication {
        let topic = try MQTTTopic(topic)
        guard payload.count <= Self.maximumPayloadSize else { throw MQTTError.payloadTooLarge(payload.count) }
        let list =
            configuration.protocolVersion == .v5 && !properties.isEmpty ? LibMosquittoProperties.publish(properties) : nil
        // The id is assigned and its owner made in one critical section: see LibMosquittoPendingAcks.
        let owner = try handle.publish(payload, to: topic.name, qos: qos, retain: retain, properties: list)
        return MQTTPublication(owner: owner, topic: topic.name, qos: qos)
    }
}

/// A message queued by ``MQTTClient/send(_:to:qos:retain:properties:)``.
public struct MQTTPublication: Sendable {
    /// Its place in the client's table of operations awaiting an answer; the only one for its message id.
    let owner: LibMosquittoAckTicket<Void>
    /// The topic it was published on.
    public let topic: String
    /// Its QoS.
    public let qos: MQTTQoS

    /// Waits for the broker's acknowledgement (QoS 1, 2) or the write (QoS 0). A lost connection does not end
    /// the wait of a QoS 1 or 2 message, which is sent again after reconnecting. Cancelling the task ends the
    /// wait with `CancellationError`; the message may still be delivered.
    /// - Throws: ``MQTTError/publishRefused(topic:reasonCode:reason:)`` when the broker refuses it;
    ///   ``MQTTError/notConnected`` when the client is disconnected (``MQTTClient/disconnect()``) before the
    ///   answer, or a QoS 0 message's connection is lost.
    public func acknowledged() async throws {
        do {
            try await owner.value()
        } catch MQTTError.publishRefused(_, let reasonCode, let reason) {
            throw MQTTError.publishRefused(topic: topic, reasonCode: reasonCode, reason: reason)
        }
    }
}
