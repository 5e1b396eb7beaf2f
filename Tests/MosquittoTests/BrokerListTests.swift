import Foundation
import LocalBroker
import Mosquitto
import RestockTestSupport
import Testing

/// A client given the brokers of a cluster (issue 25): it connects to the first that answers, and when its connection
/// is lost it tries the others in turn, by the same reconnect policy, with the same client id.
@Suite("A list of brokers")
struct BrokerListTests {
    @Test("the first broker that answers is used: a refusing one before it is skipped (failed before: the client tried the first only)")
    func connectsToTheFirstThatAnswers() async throws {
        let broker = try await MosquittoBroker.start()
        defer { Task { try? await broker.stop() } }
        let refusing = try RefusingLoopbackPort()
        var configuration = MQTTConfiguration(broker: .hostname("127.0.0.1", port: refusing.port), clientID: uniqueName())
        configuration.fallbackBrokers = [try BrokerAddress(url: broker.url)]
        let client = try MQTTClient(configuration: configuration)
        try await client.connect()
        #expect(client.currentBroker.description == broker.url)
        await client.disconnect()
    }

    @Test("when every broker refuses, connect() names each and what it said")
    func noneAnswers() async throws {
        let (first, second) = (try RefusingLoopbackPort(), try RefusingLoopbackPort())
        var configuration = MQTTConfiguration(broker: .hostname("127.0.0.1", port: first.port), clientID: uniqueName())
        configuration.fallbackBrokers = [.hostname("127.0.0.1", port: second.port)]
        let client = try MQTTClient(configuration: configuration)
        do {
            try await client.connect()
            Issue.record("connected with no broker listening")
        } catch MQTTError.unreachable(let detail) {
            #expect(detail.contains(":\(first.port): Connection refused") && detail.contains(":\(second.port): Connection refused"))
        }
    }

    @Test("a lost broker is left for the next of the list, which the client reaches by its reconnect policy (failed before: it retried the lost one alone)")
    func failsOverToTheNext() async throws {
        let (one, two) = (try await MosquittoBroker.start(), try await MosquittoBroker.start())
        defer { Task { try? await two.stop() } }
        var configuration = MQTTConfiguration(broker: try BrokerAddress(url: one.url), clientID: uniqueName(), session: .persistent)
        configuration.fallbackBrokers = [try BrokerAddress(url: two.url)]
        let client = try MQTTClient(configuration: configuration)
        let events = client.connectionEvents()
        try await client.connect()
        _ = try await nextConnection(on: events)  // this first connection's event
        #expect(client.currentBroker.description == one.url)
        try await one.kill()
        let started = ContinuousClock.now
        _ = try await nextConnection(on: events, within: 30)
        #expect(client.currentBroker.description == two.url)
        // The policy's waits (100–200 ms, then 200–400 ms) and two TCP attempts: 0.7 s here alone; room for the whole
        // suite on two cores (the kill itself took seconds there, so the clock starts after it).
        #expect(ContinuousClock.now - started < .seconds(20))
        let messages = try client.messages(matching: "list/#")
        try await client.subscribe(to: "list/#")
        try await client.publish(Array("on two".utf8), to: "list/x", qos: .atLeastOnce)
        #expect(try await first(1, of: messages).map { String(decoding: $0.payload, as: UTF8.self) } == ["on two"])
        await client.disconnect()
    }

    @Test("a list that mixes mqtt:// and mqtts:// is refused before anything is sent")
    func mixedSchemesRefused() throws {
        var configuration = MQTTConfiguration(broker: .hostname("127.0.0.1"), clientID: uniqueName())
        configuration.fallbackBrokers = [.tls("127.0.0.1")]
        #expect(throws: MQTTError.invalidConfiguration("the broker list mixes mqtt:// and mqtts://: use one scheme for every broker")) {
            try configuration.validate()
        }
    }
}
