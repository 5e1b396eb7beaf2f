import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockTestSupport
import Synchronization
import Testing

/// A journaling client that resumes after a pause (its process frozen, or starved) has the broker confirm that the
/// session is still its own before it journals anything read since: another client may have taken the session over
/// meanwhile, and the end of the connection the broker then closed may reach this side only after the messages it
/// had sent before — late, when the segment that carried it was lost and is sent again. Here a relay holds that end
/// back (``TCPProxy/holdEnds(_:)``), and a write gate that blocks the client's network thread is the freeze.
@Suite("Resuming after a pause", .timeLimit(.minutes(2)))
struct ResumptionTests {
    @Test(
        "a client woken after another took its session over journals none of what it read, whether the end of its connection comes late or never: the newer one has it all (found in CI: a frozen store applied its 20 requests in flight)",
        arguments: [true, false])
    func takenOverWhileFrozen(endArrives: Bool) async throws {
        let broker = try await MosquittoBroker.start()
        let proxy = try TCPProxy(to: broker.port)
        defer {
            proxy.holdEnds(false)
            proxy.close()
        }
        let id = uniqueName("frozen"), topic = uniqueName("held")
        let (old, journal, gate, events) = try await frozenClient(id: id, topic: topic, via: proxy)
        let publisher = try await connectedClient(to: broker)
        let fromOld = proxy.bytesFromClients
        try await sendAndWaitForTheRelay(10, to: topic, from: publisher, via: proxy)

        // The newer client takes the session: the broker closes the old one's connection, whose end the relay holds,
        // and delivers the ten again.
        let newer = try await takeOverAndReceiveTheTen(id: id, topic: topic, on: broker)

        gate.thaw()
        // It wrote after waking: its probe (which the closed connection never carries to the broker); the old code
        // wrote the acknowledgements of what it had just journaled.
        try await waitUntil("the old client to write after waking", within: 20) { proxy.bytesFromClients > fromOld }
        if endArrives { proxy.holdEnds(false) }
        // Without the end: no answer within the keepalive (5 s), and it closes the connection itself.
        try await withDeadline(30, waitingFor: "the old client's connection to end") {
            for await event in events { if case .connectionLost = event { return } }
        }
        #expect(journal.payloads == ["before"], "the old client journaled what the broker gave the newer one")
        await old.disconnect()
        await newer.disconnect()
        await publisher.disconnect()
    }

    @Test("a client woken with its session still its own journals what it read while frozen once the broker answers, and keeps its connection")
    func resumedWithTheSession() async throws {
        let broker = try await MosquittoBroker.start()
        let proxy = try TCPProxy(to: broker.port)
        defer { proxy.close() }
        let topic = uniqueName("kept")
        let (old, journal, gate, _) = try await frozenClient(id: uniqueName("paused"), topic: topic, via: proxy)
        let publisher = try await connectedClient(to: broker)
        try await sendAndWaitForTheRelay(10, to: topic, from: publisher, via: proxy)
        gate.thaw()
        try await waitUntil("what was read while frozen journaled", within: 20) { journal.payloads.count == 11 }
        #expect(journal.payloads == ["before"] + (0..<10).map { "m\($0)" })
        try await publisher.send(Array("after".utf8), to: topic, qos: .atLeastOnce).acknowledged()
        try await waitUntil("the message after", within: 20) { journal.payloads.count == 12 }
        #expect(old.isConnected && proxy.connectionsAccepted == 1, "the client reconnected")
        await old.disconnect()
        await publisher.disconnect()
    }

    @Test("a client frozen in the middle of reading (after its look at the clock), woken after another took its session over, journals none of what it read: the newer one has it all (found in CI, twice under load: a frozen store applied a request the newer one applied too)")
    func frozenWhileReading() async throws {
        let broker = try await MosquittoBroker.start()
        let proxy = try TCPProxy(to: broker.port)
        defer {
            proxy.holdEnds(false)
            proxy.close()
        }
        let id = uniqueName("reading"), topic = uniqueName("held")
        var configuration = MQTTConfiguration(broker: try BrokerAddress(url: proxy.url), clientID: id, session: .persistent, keepAliveSeconds: 5)
        configuration.reconnection = .whenAllowed
        let journal = RecordingJournal(probe: "\(topic)/probe"), freezer = ReadFreezer()
        let old = try MQTTClient(configuration: configuration, journal: journal, writeGate: freezer, logger: freezer.logger)
        try await old.connect()
        try await old.subscribe(to: topic, qos: .atLeastOnce)
        try await old.publish(Array("before".utf8), to: topic, qos: .atLeastOnce)
        try await waitUntil("the first message journaled", within: 20) { journal.payloads == ["before"] }
        proxy.holdEnds(true)
        // The network thread stops in the read of the next message, after its look at the clock: the ten reach its socket.
        freezer.freezeInTheNextRead()
        let publisher = try await connectedClient(to: broker)
        try await sendAndWaitForTheRelay(10, to: topic, from: publisher, via: proxy)
        try await waitUntil("the network thread frozen in a read", within: 20) { freezer.isFrozen }
        let newer = try await takeOverAndReceiveTheTen(id: id, topic: topic, on: broker)

        freezer.thaw()
        // The old code read the other nine after the first, found no end behind them, and journaled the ten.
        try await waitUntil("the old client to journal or drop what it read", within: 20) { journal.payloads.count > 1 || !old.isConnected }
        proxy.holdEnds(false)
        try await waitUntil("the old client's connection to end", within: 30) { !old.isConnected }
        #expect(journal.payloads == ["before"], "the old client journaled what the broker gave the newer one")
        await old.disconnect()
        await newer.disconnect()
        await publisher.disconnect()
    }

    /// A newer client that takes the session `id` over on `broker` and is delivered again the ten messages
    /// ``sendAndWaitForTheRelay(_:to:from:via:)`` sent to `topic`, none of which the older one acknowledged.
    private func takeOverAndReceiveTheTen(id: String, topic: String, on broker: MosquittoBroker) async throws -> MQTTClient {
        var configuration = MQTTConfiguration(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent)
        configuration.reconnection = .whenAllowed
        let newer = try MQTTClient(configuration: configuration)
        let delivered = try newer.messages(matching: topic)
        try await newer.connect()
        let redelivered = try await first(10, of: delivered).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(Set(redelivered) == Set((0..<10).map { "m\($0)" }))
        return newer
    }

    /// A client of `proxy` with a persistent session `id`, subscribed to `topic` (QoS 1), journaling with a probe, that
    /// reconnects only when allowed (never, here): it has journaled one message, `before`, and its network thread is
    /// now frozen.
    private func frozenClient(
        id: String, topic: String, via proxy: TCPProxy
    ) async throws -> (MQTTClient, RecordingJournal, FreezingGate, AsyncStream<MQTTConnectionEvent>) {
        var configuration = MQTTConfiguration(
            broker: try BrokerAddress(url: proxy.url), clientID: id, session: .persistent, keepAliveSeconds: 5)
        configuration.reconnection = .whenAllowed
        let journal = RecordingJournal(probe: "\(topic)/probe"), gate = FreezingGate()
        let client = try MQTTClient(configuration: configuration, journal: journal, writeGate: gate)
        let events = client.connectionEvents()
        try await client.connect()
        try await client.subscribe(to: topic, qos: .atLeastOnce)
        try await client.publish(Array("before".utf8), to: topic, qos: .atLeastOnce)
        try await waitUntil("the first message journaled", within: 20) { journal.payloads == ["before"] }
        proxy.holdEnds(true)
        gate.freeze()
        try await waitUntil("the network thread frozen", within: 20) { gate.isFrozen }
        return (client, journal, gate, events)
    }

    /// Sends `count` messages `m0`, `m1`, … to `topic` (QoS 1, each acknowledged by the broker), and waits until the
    /// relay has passed on to its clients as many bytes as their PUBLISH packets make (MQTT 5, no properties).
    private func sendAndWaitForTheRelay(_ count: Int, to topic: String, from publisher: MQTTClient, via proxy: TCPProxy) async throws {
        let relayed = proxy.bytesToClients
        var size = 0
        for index in 0..<count {
            let payload = Array("m\(index)".utf8)
            try await publisher.send(payload, to: topic, qos: .atLeastOnce).acknowledged()
            // Fixed header (2), topic (2 + its bytes), packet id (2), properties' length (1), payload.
            size += 2 + 2 + topic.utf8.count + 2 + 1 + payload.count
        }
        let expected = relayed + size
        try await waitUntil("\(count) messages relayed to the frozen client", within: 20) { proxy.bytesToClients >= expected }
    }
}

/// Records the payloads of what it is given, and asks for a probe.
private final class RecordingJournal: MQTTInboundJournal {
    let confirmationProbe: String?
    private let recorded = Mutex<[String]>([])

    init(probe: String) { confirmationProbe = probe }

    var payloads: [String] { recorded.withLock { $0 } }

    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        recorded.withLock { $0 += messages.map { String(decoding: $0.payload, as: UTF8.self) } }
        return messages.map { _ in .recorded }
    }
}

/// A write gate that freezes the network thread on demand: once ``freeze()`` is called, the thread's next look at the
/// clock counts as a pause, and asking the gate blocks it until ``thaw()``, which then allows it to go on.
private final class FreezingGate: MQTTWriteGate {
    private let armed = Atomic<Bool>(false), frozen = Atomic<Bool>(false)

    var pauseLimit: Duration { armed.load(ordering: .acquiring) ? .zero : .seconds(3_600) }

    func mayWrite() -> Bool {
        guard armed.load(ordering: .acquiring) else { return true }
        frozen.store(true, ordering: .releasing)
        // The client's own network thread, never Swift's pool: blocking here is the freeze.
        while armed.load(ordering: .acquiring) { usleep(1_000) }
        frozen.store(false, ordering: .releasing)
        return true
    }

    func freeze() { armed.store(true, ordering: .releasing) }
    func thaw() { armed.store(false, ordering: .releasing) }
    var isFrozen: Bool { frozen.load(ordering: .acquiring) }
}

/// Freezes a client's network thread in the middle of a read phase: its logger (at `.trace`, where libmosquitto traces
/// each packet read) blocks the thread in the trace of the next PUBLISH read once ``freezeInTheNextRead()`` was called,
/// until ``thaw()``; as its write gate, it counts every look at the clock from then on as a pause, and allows going on.
private final class ReadFreezer: MQTTWriteGate {
    private let armed = Atomic<Bool>(false), frozen = Atomic<Bool>(false), paused = Atomic<Bool>(false)

    var pauseLimit: Duration { paused.load(ordering: .acquiring) ? .zero : .seconds(3_600) }
    func mayWrite() -> Bool { true }

    func freezeInTheNextRead() { armed.store(true, ordering: .releasing) }
    func thaw() { frozen.store(false, ordering: .releasing) }
    var isFrozen: Bool { frozen.load(ordering: .acquiring) }

    var logger: Logger {
        var logger = Logger(label: "read-freezer") { _ in Handler(freezer: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Called on the network thread, inside libmosquitto's read of a packet.
    fileprivate func traced(_ line: String) {
        guard line.contains("received PUBLISH"), armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        paused.store(true, ordering: .releasing)
        frozen.store(true, ordering: .releasing)
        // The client's own network thread, never Swift's pool: blocking here is the freeze.
        while frozen.load(ordering: .acquiring) { usleep(1_000) }
    }

    private struct Handler: LogHandler {
        let freezer: ReadFreezer
        var logLevel = Logger.Level.trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { freezer.traced("\(event.message)") }
    }
}
