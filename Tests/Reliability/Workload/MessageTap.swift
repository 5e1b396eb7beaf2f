import Foundation
import Mosquitto
import Synchronization

/// Every message on some filters, as one client receives them, in arrival order.
final class MessageTap: Sendable {
    private final class Box: Sendable {
        let received = Mutex<[(topic: String, payload: [UInt8])]>([])
    }

    let client: MQTTClient
    private let box: Box
    private let readers: [Task<Void, Never>]

    /// Connects as `clientID` (a clean session unless `persistent`) and subscribes at QoS 1 to each filter.
    /// Throws when the connection is refused; a subscription the broker refuses is let be.
    init(
        url: String, filters: [String], username: String? = nil, password: String? = nil, clientID: String? = nil,
        persistent: Bool = false
    ) async throws {
        let client = try MQTTClient(
            configuration: .init(
                broker: try BrokerAddress(url: url), clientID: clientID ?? "tap-\(UUID().uuidString.prefix(8))",
                session: persistent ? .persistent : .clean, username: username, password: password, maxInflight: 1_000))
        self.client = client
        let box = Box()
        self.box = box
        readers = try filters.map { filter in
            let messages = try client.messages(matching: filter)
            return Task {
                for await message in messages {
                    box.received.withLock { $0.append((message.topic, message.payload)) }
                }
            }
        }
        try await client.connect()
        for filter in filters { _ = try? await client.subscribe(to: filter, qos: .atLeastOnce) }
    }

    /// Everything received so far (a message matching two filters is there twice).
    var messages: [(topic: String, payload: [UInt8])] { box.received.withLock { $0 } }

    /// How many messages arrived on `topic`.
    func count(on topic: String) -> Int { messages.filter { $0.topic == topic }.count }

    func close() async {
        for reader in readers { reader.cancel() }
        await client.disconnect()
    }
}
