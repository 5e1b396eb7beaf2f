import RestockPipeline
import Foundation
import LocalBroker
import RestockMQTT
import Deadlines

/// Waits on the store's database, read alongside the running store.
public enum StoreQueues {
    /// Until `count` watches are stored.
    public static func waitForWatches(
        _ count: Int, in data: URL, within seconds: Double, pollEvery interval: Duration = .milliseconds(100)
    ) async throws {
        try await waitUntil("\(count) watches stored", within: seconds, pollEvery: interval) {
            (try? StoreDatabase.queueLengths(readingOnly: data).watches) == count
        }
    }

    /// Until every request is applied and every message acknowledged by the broker.
    public static func waitUntilDrained(_ data: URL, within seconds: Double) async throws {
        try await waitUntil("the store's inbox and outbox to empty", within: seconds, pollEvery: .milliseconds(100)) {
            guard let queues = try? StoreDatabase.queueLengths(readingOnly: data) else { return false }
            return queues.inbox == 0 && queues.outbox == 0
        }
    }
}
