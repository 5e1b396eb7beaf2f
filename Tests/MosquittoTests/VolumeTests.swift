import Mosquitto
import RestockTestSupport
import Synchronization
import Testing
import Deadlines

@Suite("Volume", .timeLimit(.minutes(3)))
struct VolumeTests {
    @Test("70,001 QoS 1 messages on one connection all arrive (message ids wrap past 65,535)")
    func seventyThousand() async throws {
        let broker = try await MosquittoBroker.start()
        let topic = uniqueName("volume")
        let reader = try await connectedClient(to: broker)
        let messages = try reader.messages(matching: topic)
        try await reader.subscribe(to: topic)
        let writer = try await connectedClient(to: broker)
        let total = 70_001

        let counting = Task {
            var seen = Set<Int>()
            for await message in messages {
                if let text = message.payloadString, let index = Int(text) { seen.insert(index) }
                if seen.count == total { break }
            }
            return seen
        }
        // Publish with a bounded window of unacknowledged messages, each awaiting its PUBACK.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                if index >= 500 { try await group.next() }
                group.addTask { try await writer.publish(String(index), to: topic, qos: .atLeastOnce) }
            }
            try await group.waitForAll()
        }
        let seen = try await withDeadline(120, waitingFor: "all \(total) messages") { await counting.value }
        #expect(seen.count == total)
        #expect(seen.min() == 0 && seen.max() == total - 1)
        await writer.disconnect()
        await reader.disconnect()
    }
}
