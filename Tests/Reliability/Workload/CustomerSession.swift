import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport

/// One customer's own connection, as `restock listen` makes it: client id `restock:apple:{customer}`, a
/// persistent session, QoS 1 on its alerts topic. Counts every delivery, duplicates included.
final class CustomerSession: Sendable {
    let customer: String
    private let alerts: AlertCollector

    /// Connects and subscribes (the session, and so the queue, exists from then on).
    init(_ customer: String, url: String, username: String? = nil, password: String? = nil) async throws {
        self.customer = customer
        alerts = try await AlertCollector(
            url: url, filter: "restock/apple/customers/\(customer)/alerts", clientID: SessionClientIDs.listening(try CustomerID(customer), at: try StoreID("apple")),
            username: username, password: password)
    }

    /// Publishes a request as this customer and waits for the broker's acknowledgement.
    func publish(_ payload: String, to topic: String) async throws {
        try await alerts.client.publish(payload, to: topic, qos: .atLeastOnce)
    }

    var distinct: Int { alerts.distinct }
    var deliveries: Int { alerts.total }

    /// Goes away; the broker keeps the session and queues what comes.
    func close() async { await alerts.close() }
}
