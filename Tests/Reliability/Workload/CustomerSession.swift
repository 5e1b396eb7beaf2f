import Foundation
import Mosquitto
import RestockCore
import Synchronization

/// One customer's own connection, as `restock listen` makes it: client id `restock-apple-{customer}`, a
/// persistent session, QoS 1 on its alerts topic. Counts every delivery, duplicates included.
final class CustomerSession: Sendable {
    private final class Box: Sendable {
        let ids = Mutex<(distinct: Set<String>, deliveries: Int)>(([], 0))
    }

    let customer: String
    private let client: MQTTClient
    private let box = Box()
    private let reader: Task<Void, Never>

    /// Connects and subscribes (the session, and so the queue, exists from then on).
    init(_ customer: String, url: String, username: String? = nil, password: String? = nil) async throws {
        self.customer = customer
        let topic = "restock/apple/customers/\(customer)/alerts"
        client = try MQTTClient(
            configuration: .init(
                broker: try BrokerAddress(url: url), clientID: "restock-apple-\(customer)", session: .persistent,
                username: username, password: password, maxInflight: 1_000))
        let messages = try client.messages(matching: topic)
        try await client.connect()
        try await client.subscribe(to: topic, qos: .atLeastOnce)
        let box = self.box
        reader = Task {
            for await message in messages {
                guard let alert = try? RestockAlert(jsonData: Data(message.payload)) else { continue }
                box.ids.withLock {
                    $0.distinct.insert(alert.id)
                    $0.deliveries += 1
                }
            }
        }
    }

    /// Publishes a request as this customer and waits for the broker's acknowledgement.
    func publish(_ payload: String, to topic: String) async throws {
        try await client.publish(payload, to: topic, qos: .atLeastOnce)
    }

    var distinct: Int { box.ids.withLock { $0.distinct.count } }
    var deliveries: Int { box.ids.withLock { $0.deliveries } }

    /// Goes away; the broker keeps the session and queues what comes.
    func close() async {
        reader.cancel()
        await client.disconnect()
    }
}
