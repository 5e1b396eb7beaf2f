import Foundation
import LocalBroker
import Mosquitto
import RestockMQTT

/// Requests published by one MQTT client, many in flight at once, each acknowledged by the broker.
public enum Requests {
    /// Publishes every `(topic, payload)` at QoS 1 in order and waits for every acknowledgement.
    public static func publish(
        _ requests: [(topic: String, payload: [UInt8])], to url: String, username: String? = nil, password: String? = nil,
        protocolVersion: MQTTProtocolVersion = .v5
    ) async throws {
        let client = try MQTTClient(
            configuration: .init(
                broker: try BrokerAddress(url: url), clientID: "requests-\(UUID().uuidString.prefix(8))", protocolVersion: protocolVersion,
                username: username, password: password, maxInflight: 1_000))
        try await client.connect()
        // Windows of 5,000 keep libmosquitto's queue short while keeping the pipe full.
        try await client.sendAll(requests) { try $0.send($1.payload, to: $1.topic, qos: .atLeastOnce) }
        await client.disconnect()
    }

    /// One subscribe request per customer for `sku`.
    public static func subscriptions(_ customers: [String], to sku: String, mode: String = "once") -> [(topic: String, payload: [UInt8])] {
        customers.map { ("restock/apple/subscribe/\($0)", Array(#"{"sku":"\#(sku)","mode":"\#(mode)"}"#.utf8)) }
    }

    /// `count` customer ids with `prefix`, zero-padded so they sort in creation order.
    public static func customers(_ count: Int, prefix: String) -> [String] {
        // Not String(format:): 40,000 of those held a thread of the cooperative pool for a second on a loaded machine.
        (0..<count).map { index in
            let digits = String(index)
            return prefix + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
        }
    }
}
