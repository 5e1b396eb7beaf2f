import CMosquitto

/// The libmosquitto calls the client's callers make, on whatever thread they are on: each queues a packet (which the
/// network thread writes) under the context's lock, with its acknowledgement's owner made in the same critical section.
extension LibMosquittoHandle {
    /// Queues a SUBSCRIBE; `filter` becomes an active subscription as it is queued.
    /// - Returns: The owner of its answer, and the subscription it replaced.
    func subscribe(
        to filter: String, _ subscription: MQTTClientStateMachine.ActiveSubscription
    ) throws(MQTTError) -> (ticket: LibMosquittoAckTicket<MQTTQoS>, previous: MQTTClientStateMachine.ActiveSubscription?) {
        let pointer = self.pointer
        return try context.subscribe(to: filter, subscription) { mid in
            mosquitto_subscribe_v5(pointer, &mid, filter, subscription.qos.rawValue, subscription.options, nil)
        }
    }

    /// Queues an UNSUBSCRIBE; `filter` stops being an active subscription as it is queued.
    func unsubscribe(from filter: String) throws(MQTTError) -> LibMosquittoAckTicket<Void> {
        let pointer = self.pointer
        return try context.unsubscribe(from: filter) { mid in mosquitto_unsubscribe_v5(pointer, &mid, filter, nil) }
    }

    /// Queues a PUBLISH. A QoS 1 or 2 message is queued while the connection is down too (libmosquitto sends it after
    /// reconnecting); a QoS 0 message then fails.
    func publish(
        _ payload: [UInt8], to topic: String, qos: MQTTQoS, retain: Bool, properties: LibMosquittoProperties.List?
    ) throws(MQTTError) -> LibMosquittoAckTicket<Void> {
        let pointer = self.pointer
        return try context.register(
            in: MQTTClientStateMachine.publishTable, failsOnDisconnect: qos == .atMostOnce, queuedWhileDisconnected: qos != .atMostOnce
        ) { mid in
            payload.withUnsafeBytes { bytes in
                mosquitto_publish_v5(pointer, &mid, topic, Int32(bytes.count), bytes.baseAddress, qos.rawValue, retain, properties?.head)
            }
        }
    }
}
