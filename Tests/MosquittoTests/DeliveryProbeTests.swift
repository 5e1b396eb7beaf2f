import Deadlines
import RestockTestSupport
@testable import Mosquitto
import Synchronization
import Testing

/// A journal that asks for a probe hears, batch by batch, that the broker took the acknowledgements written before it
/// (``MQTTInboundJournal/confirmationProbe``): against a real mosquitto, over MQTT 5 and 3.1.1.
@Suite("Delivery probes", .timeLimit(.minutes(2)))
struct DeliveryProbeTests {
    @Test("each batch recorded whole is confirmed by the broker's answer to the probe after it, in order, up to the last", arguments: [MQTTProtocolVersion.v5, .v311])
    func confirmations(version: MQTTProtocolVersion) async throws {
        let broker = try await MosquittoBroker.start(.init(extraConfiguration: "max_queued_messages 100000"))
        let id = uniqueName("probed"), topic = uniqueName("burst")
        let subscriber = try await connectedClient(to: broker, clientID: id, session: .persistent, protocolVersion: version)
        try await subscriber.subscribe(to: topic, qos: .atLeastOnce)
        await subscriber.disconnect()
        let publisher = try await connectedClient(to: broker)
        for publication in try (0..<500).map({ try publisher.send(Array(String($0).utf8), to: topic, qos: .atLeastOnce) }) {
            try await publication.acknowledged()
        }

        let journal = ProbingJournal(probe: "\(topic)/probe")
        let client = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent, protocolVersion: version),
            journal: journal)
        let messages = try client.messages(matching: topic)
        try await client.connect()
        try await waitUntil("500 messages recorded and their last batch confirmed", within: 30, pollEvery: .milliseconds(5)) {
            let (recorded, batches, confirmed) = journal.snapshot
            return recorded == 500 && confirmed.last == batches
        }
        let (_, batches, confirmed) = journal.snapshot
        #expect(confirmed == confirmed.sorted() && Set(confirmed).count == confirmed.count, "in order, each once: \(confirmed)")
        #expect(batches >= 1 && confirmed.allSatisfy { (1...batches).contains($0) })
        // The probe changed nothing: the subscription still delivers.
        try await publisher.send(Array("after".utf8), to: topic, qos: .atLeastOnce).acknowledged()
        try await withDeadline(10, waitingFor: "a message after the probes") {
            for await message in messages where message.payload == Array("after".utf8) { return }
        }
        await client.disconnect()
        await publisher.disconnect()
    }
}

/// Counts what it records (batch numbers as the client gives them), and the confirmations, in order.
private final class ProbingJournal: MQTTInboundJournal {
    let confirmationProbe: String?
    private let state = Mutex((recorded: 0, lastBatch: UInt64(0), confirmed: [UInt64]()))

    init(probe: String) { confirmationProbe = probe }

    var snapshot: (recorded: Int, batches: UInt64, confirmed: [UInt64]) { state.withLock { ($0.recorded, $0.lastBatch, $0.confirmed) } }

    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        state.withLock { state in
            state.recorded += messages.count
            state.lastBatch = number
        }
        return messages.map { _ in .recorded }
    }

    func confirmed(throughBatch number: UInt64) { state.withLock { $0.confirmed.append(number) } }
}
