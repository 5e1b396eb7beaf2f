import Deadlines
import Foundation
import Mosquitto
import RestockMQTT
import RestockPipeline
import Testing

/// ``StoreLiveness``'s waits: woken by what changes the view, never by polling it (issue 33).
@Suite("The view of a store's status and claim")
struct StoreLivenessTests {
    private static func retainedStatus() -> MQTTMessage {
        let status = StoreStatus.online(store: apple, since: Date(), instance: "a0000000000a", heartbeatAt: Date())
        return MQTTMessage(topic: appleTopics.status, payload: status.payloadBytes(), qos: .atLeastOnce, retain: true)
    }

    @Test("a wait for the view to be current sleeps on the view's signal and ends when the retained status comes (it polled every 20 ms)")
    func waitEndsOnStatus() async throws {
        let liveness = StoreLiveness(topics: appleTopics)
        liveness.connected(readingClaim: false)
        let waiting = Task { try await liveness.waitUntilCurrent() }
        try await waitUntil("the wait to sleep on the view's signal", within: 10, pollEvery: .milliseconds(5)) {
            liveness.nextChange().waiterCount == 1
        }
        liveness.received(Self.retainedStatus())
        try await withDeadline(10, waitingFor: "the wait to end") { try await waiting.value }
        #expect(liveness.status?.instance == "a0000000000a")
        #expect(liveness.nextChange().waiterCount == 0)
    }

    @Test("a message on another topic does not wake the waits; a cancelled wait throws CancellationError and leaves nothing waiting")
    func otherTopicsAndCancellation() async throws {
        let liveness = StoreLiveness(topics: appleTopics)
        liveness.connected(readingClaim: false)
        let signal = liveness.nextChange()
        liveness.received(MQTTMessage(topic: "restock/apple/inventory", payload: [], qos: .atLeastOnce, retain: true))
        #expect(!signal.isOpen)
        let waiting = Task { try await liveness.waitUntilCurrent() }
        try await waitUntil("the wait to sleep on the view's signal", within: 10, pollEvery: .milliseconds(5)) { signal.waiterCount == 1 }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(signal.waiterCount == 0)
    }
}
