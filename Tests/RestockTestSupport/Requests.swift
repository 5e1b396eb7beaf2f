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
        var start = requests.startIndex
        while start < requests.endIndex {
            let window = requests[start..<min(start + 5_000, requests.endIndex)]
            let publications = try window.map { try client.send($0.payload, to: $0.topic, qos: .atLeastOnce) }
            for publication in publications { try await publication.acknowledged() }
            start = window.endIndex
        }
        await client.disconnect()
    }

    /// One subscribe request per customer for `sku`.
    public static func subscriptions(_ customers: [String], to sku: String, mode: String = "once") -> [(topic: String, payload: [UInt8])] {
        customers.map { ("restock/apple/subscribe/\($0)", Array(#"{"sku":"\#(sku)","mode":"\#(mode)"}"#.utf8)) }
    }

    /// `count` customer ids with `prefix`, zero-padded so they sort in creation order.
    public static func customers(_ count: Int, prefix: String) -> [String] {
        (0..<count).map { "\(prefix)\(String(format: "%05d", $0))" }
    }
}
