extension MQTTClient {
    /// Subscribes and waits for the broker's answer. The subscription is made again by itself after a
    /// reconnect to a broker that lost the session. If the connection drops before the answer, this
    /// throws ``MQTTError/notConnected`` (the subscription is still made again on reconnect).
    /// - Parameters:
    ///   - options: MQTT v5 subscription options; a 3.1.1 connection sends none.
    /// - Returns: The QoS the broker granted.
    /// - Throws: ``MQTTError/invalidTopicFilter(_:reason:)`` before anything is sent;
    ///   ``MQTTError/subscribeRefused(filter:reasonCode:reason:)`` when the broker refuses it.
    @discardableResult
    public func subscribe(
        to filter: String, qos: MQTTQoS = .atLeastOnce, options: MQTTSubscriptionOptions = .init()
    ) async throws -> MQTTQoS {
        let filter = try MQTTTopicFilter(filter)
        let subscription = MQTTClientStateMachine.ActiveSubscription(
            qos: qos, options: context.protocolVersion == .v5 ? options.libMosquittoValue : 0)
        // The filter becomes an active subscription as the SUBSCRIBE is queued, in one critical section.
        let (owner, previous) = try handle.subscribe(to: filter.filter, subscription)
        do {
            return try await owner.value()
        } catch {
            context.subscribeFailed(filter.filter, restoring: previous)
            if case MQTTError.subscribeRefused(_, let reasonCode, let reason) = error {
                throw MQTTError.subscribeRefused(filter: filter.filter, reasonCode: reasonCode, reason: reason)
            }
            throw error
        }
    }

    /// Unsubscribes and waits for the broker's acknowledgement.
    /// - Throws: ``MQTTError/invalidTopicFilter(_:reason:)`` before anything is sent.
    public func unsubscribe(from filter: String) async throws {
        let filter = try MQTTTopicFilter(filter)
        try await handle.unsubscribe(from: filter.filter).value()
    }

    /// The incoming messages whose topic matches `filter` (by libmosquitto's matcher), from now on, in
    /// arrival order. Make the stream before subscribing, so that retained messages are not missed.
    /// The stream ends at ``disconnect()``; releasing it stops the delivery to it.
    /// - Throws: ``MQTTError/invalidTopicFilter(_:reason:)``.
    public func messages(matching filter: String = "#") throws(MQTTError) -> AsyncStream<MQTTMessage> {
        context.addMessageSink(filter: try MQTTTopicFilter(filter))
    }

    /// The filters the client is subscribed to, and their QoS.
    public var subscriptions: [String: MQTTQoS] { context.subscriptions }
}
