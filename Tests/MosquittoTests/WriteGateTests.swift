import Deadlines
import Foundation
import Mosquitto
import RestockTestSupport
import Synchronization
import Testing

/// ``MQTTWriteGate``: asked after the network thread was held up and before every reconnect; once it refuses, the
/// client writes nothing more (what a store whose lease was taken over while it was frozen must do).
@Suite("The write gate")
struct WriteGateTests {
    /// A gate a test opens and closes, counting how often it was asked.
    final class Gate: MQTTWriteGate {
        let pauseLimit: Duration
        private let open = Atomic<Bool>(true)
        private let asks = Atomic<Int>(0)

        init(pauseLimit: Duration) { self.pauseLimit = pauseLimit }

        func mayWrite() -> Bool {
            asks.add(1, ordering: .relaxed)
            return open.load(ordering: .acquiring)
        }

        func close() { open.store(false, ordering: .releasing) }
        var asked: Int { asks.load(ordering: .relaxed) }
    }

    @Test("once the gate refuses, a message sent is never written: the broker never has it, and the client stops unwritten when told")
    func refusedWritesNothing() async throws {
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        let watcher = try await connectedClient(to: broker)
        let seen = try watcher.messages(matching: "gate/#")
        try await watcher.subscribe(to: "gate/#")
        // Limit zero: every look counts as a pause, so the gate is asked before every read and write phase.
        let gate = Gate(pauseLimit: .zero)
        let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: uniqueName()), writeGate: gate)
        try await client.connect()
        try await client.publish(Array("before".utf8), to: "gate/a", qos: .atLeastOnce)
        #expect(gate.asked > 0)

        gate.close()
        let asked = gate.asked
        _ = try client.send(Array("after".utf8), to: "gate/a", qos: .atLeastOnce)
        try await waitUntil("the gate asked after it closed", within: 20) { gate.asked > asked }
        // The refusal shut the socket before any write: what the watcher receives next is the marker.
        try await watcher.publish(Array("marker".utf8), to: "gate/marker", qos: .atLeastOnce)
        let received = try await first(2, of: seen).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(received == ["before", "marker"])
        try await withDeadline(20, waitingFor: "disconnect() of a fenced client") { await client.disconnect() }
        await watcher.disconnect()
    }

    @Test("without a pause the gate is never asked: a thousand messages cost no look at it")
    func notAskedWithoutAPause() async throws {
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        let gate = Gate(pauseLimit: .seconds(3_600))
        let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: uniqueName()), writeGate: gate)
        try await client.connect()
        let publications = try (0..<1_000).map { try client.send(Array("m\($0)".utf8), to: "gate/many", qos: .atLeastOnce) }
        for publication in publications { try await publication.acknowledged() }
        #expect(gate.asked == 0)
        await client.disconnect()
    }

    @Test("the gate is asked before a reconnect: refused, the client does not reconnect to the broker back on its port")
    func askedBeforeAReconnect() async throws {
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        let gate = Gate(pauseLimit: .seconds(3_600))
        let client = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: uniqueName(), session: .persistent), writeGate: gate)
        let events = client.connectionEvents()
        try await client.connect()
        _ = try await nextConnection(on: events)
        gate.close()
        try await broker.kill()
        try await broker.launch()
        try await waitUntil("the gate asked before the reconnect", within: 30) { gate.asked > 0 }
        #expect(!client.isConnected)
        try await withDeadline(20, waitingFor: "disconnect() of a fenced client") { await client.disconnect() }
    }
}
