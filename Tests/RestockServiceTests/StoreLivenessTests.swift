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

    private static func liveStatus(of instance: String, beat: Int) -> MQTTMessage {
        let at = Date(timeIntervalSince1970: 1_800_000_000 + Double(beat))
        let status = StoreStatus.online(store: apple, since: at, instance: instance, heartbeatAt: at)
        return MQTTMessage(topic: appleTopics.status, payload: status.payloadBytes(), qos: .atLeastOnce, retain: false)
    }

    // Names that sort the replaced instance first, as the old choice (the first by name) would take it.
    private static let replaced = "a0000000000a", own = "b0000000000b", successor = "c0000000000c"
    private var replaced: String { Self.replaced }
    private var own: String { Self.own }
    private var successor: String { Self.successor }

    /// The view of store `own`, which went online after `replaced`'s status was seen live.
    private static func wentOnlineReplacing() -> StoreLiveness {
        let liveness = StoreLiveness(topics: appleTopics)
        liveness.connected(readingClaim: false)
        liveness.received(liveStatus(of: replaced, beat: 0))
        liveness.received(liveStatus(of: own, beat: 1))
        liveness.wentOnline(own: own)
        return liveness
    }

    @Test(
        "a store taken over names the instance that took it over, not the one it replaced whose late heartbeats it saw (it named the first by name)",
        arguments: [false, true])
    func newerInstanceIsTheSuccessor(olderBeatsLast: Bool) async throws {
        let liveness = Self.wentOnlineReplacing()
        #expect(liveness.isOlder(replaced))
        // The replaced instance's heartbeat, held back by the network, before or after the successor's first status.
        if olderBeatsLast {
            liveness.received(Self.liveStatus(of: successor, beat: 2))
            liveness.received(Self.liveStatus(of: replaced, beat: 3))
        } else {
            liveness.received(Self.liveStatus(of: replaced, beat: 2))
            liveness.received(Self.liveStatus(of: successor, beat: 3))
        }
        #expect(liveness.hasBeenSeenOnline(replaced))
        let newer = try await withDeadline(10, waitingFor: "the newer instance") { try await liveness.newerInstance(than: own) }
        #expect(newer == successor)
    }

    @Test("a store cut off past its keepalive, that had seen a late heartbeat of the instance it replaced, names the one whose retained status it finds when back: the successor it never saw live (found by an outside trial: it named the one it replaced)")
    func newerInstanceSeenOnlyRetained() async throws {
        let liveness = Self.wentOnlineReplacing()
        liveness.received(Self.liveStatus(of: replaced, beat: 2))
        // Cut off: the successor took over meanwhile; back, the view has its status only as the broker retained it.
        liveness.connected(readingClaim: false)
        let at = Date(timeIntervalSince1970: 1_800_000_010)
        let retained = StoreStatus.online(store: apple, since: at, instance: successor, heartbeatAt: at)
        liveness.received(MQTTMessage(topic: appleTopics.status, payload: retained.payloadBytes(), qos: .atLeastOnce, retain: true))
        let newer = try await withDeadline(10, waitingFor: "the newer instance") { try await liveness.newerInstance(than: own) }
        #expect(newer == successor)
    }

    @Test("of two instances seen online that are not older, the one seen alive last is named")
    func newerInstanceSeenLast() async throws {
        let liveness = StoreLiveness(topics: appleTopics)
        liveness.connected(readingClaim: false)
        liveness.received(Self.liveStatus(of: "a0000000000a", beat: 0))
        liveness.received(Self.liveStatus(of: "d0000000000d", beat: 1))
        let newer = try await withDeadline(10, waitingFor: "the newer instance") { try await liveness.newerInstance(than: "b0000000000b") }
        #expect(newer == "d0000000000d")
    }
}
