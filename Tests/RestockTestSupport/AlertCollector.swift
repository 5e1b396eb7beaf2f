import Foundation
import Mosquitto
import RestockMQTT
import RestockCore
import Synchronization

/// Every alert received on a filter (all customers' alerts by default), by one subscriber with a persistent
/// session: ids per customer, deliveries counted with their duplicates, and the alerts in arrival order.
public final class AlertCollector: Sendable {
    private struct Tally {
        var ids: [String: Set<String>] = [:]
        var deliveries = 0
        var arrivals: [RestockAlert] = []
    }

    private final class Box: Sendable {
        let tally = Mutex(Tally())
    }

    private let box = Box()
    public let client: MQTTClient
    private let reader: Task<Void, Never>

    /// Connects to `url` (the broker's own listener when `nil`) and subscribes at QoS 1 to `filter`.
    public convenience init(
        broker: MosquittoBroker, url: String? = nil, filter: String = "restock/apple/customers/+/alerts",
        clientID: String = "collector-\(UUID().uuidString.prefix(6))", username: String? = nil, password: String? = nil
    ) async throws {
        try await self.init(url: url ?? broker.url, filter: filter, clientID: clientID, username: username, password: password)
    }

    /// Connects to `url` (one URL or a list: the first that answers, and the others after a loss) as `clientID`, with
    /// a persistent session, and subscribes at QoS 1 to `filter`.
    public init(
        url: String, filter: String, clientID: String, username: String? = nil, password: String? = nil,
        protocolVersion: MQTTProtocolVersion = .v5
    ) async throws {
        let settings = try BrokerSettings(url: url, username: username, password: password, protocolVersion: protocolVersion)
        client = try MQTTClient(configuration: settings.configuration(clientID: clientID, session: .persistent))
        let messages = try client.messages(matching: filter)
        try await client.connect()
        try await client.subscribe(to: filter, qos: .atLeastOnce)
        let box = self.box
        reader = Task {
            for await message in messages {
                guard let alert = try? RestockAlert(jsonData: Data(message.payload)) else { continue }
                box.tally.withLock {
                    _ = $0.ids[alert.customer.rawValue, default: []].insert(alert.id)
                    $0.deliveries += 1
                    $0.arrivals.append(alert)
                }
            }
        }
    }

    /// How many customers have had at least one alert.
    public var customers: Int { box.tally.withLock { $0.ids.count } }
    /// Every delivery, duplicates included.
    public var total: Int { box.tally.withLock { $0.deliveries } }
    /// Distinct alert ids received.
    public var distinct: Int { box.tally.withLock { $0.ids.values.reduce(0) { $0 + $1.count } } }
    /// Distinct alert ids received, by customer id.
    public var idsByCustomer: [String: Set<String>] { box.tally.withLock { $0.ids } }
    /// Every delivery in the order it arrived, duplicates included.
    public var arrivals: [RestockAlert] { box.tally.withLock { $0.arrivals } }

    public func close() async {
        reader.cancel()
        await client.disconnect()
    }
}
