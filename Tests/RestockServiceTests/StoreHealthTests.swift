import Deadlines
import Foundation
import RestockMQTT
import RestockTestSupport
import Testing

/// What `/livez` and `/readyz` answer from (``StoreHealth``), through a store's phases on a broker in memory.
@Suite("Store health")
struct StoreHealthTests {
    func reason(_ check: StoreHealth.Check) -> String? {
        if case .failing(let reason) = check { return reason }
        return nil
    }

    @Test("ready once online; a graceful stop is draining (alive, not ready) until the outbox is drained; then stopped")
    func phases() async throws {
        let broker = InMemoryBroker()
        let store = try RunningStore(on: broker)
        let health = store.service.health
        #expect(health.liveness == .passing)
        try await waitUntil("ready", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
        #expect(broker.status?.isOnline == true)

        // The broker holds its acknowledgements: the drain waits for a mirror's.
        broker.holdAcknowledgements()
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("alice's mirror sent", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
        }
        let stopping = Task { await store.stop() }
        try await waitUntil("draining", within: 60, pollEvery: .milliseconds(5)) { reason(health.readiness)?.hasPrefix("draining") == true }
        #expect(health.liveness == .passing)
        broker.releaseAcknowledgements()
        try await stopping.value.get()
        #expect(health.readiness == .failing("stopped"))
        #expect(health.liveness == .failing("stopped"))
    }

    @Test("not ready while its session is down, with the reason; ready again once it is back")
    func sessionDown() async throws {
        let broker = InMemoryBroker()
        let store = try RunningStore(on: broker)
        let health = store.service.health
        try await waitUntil("ready", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
        broker.stop()
        try await waitUntil("not ready", within: 60, pollEvery: .milliseconds(5)) {
            reason(health.readiness)?.contains("session with the broker is down") == true
        }
        #expect(health.liveness == .passing)
        broker.start()
        try await waitUntil("ready again", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
        #expect(health.liveness == .passing)
        await store.stop()
    }
}
