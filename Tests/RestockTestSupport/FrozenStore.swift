import Foundation
import RestockCore
import RestockMQTT
import Deadlines

extension StoreProcess {
    /// The frozen-store takeover (R7d and its test): freezes this live store (SIGSTOP: a stalled process, or a
    /// host cut off with its connection open) until its retained heartbeat is stale, starts `newer` (which takes
    /// the session), wakes this one (SIGCONT) and streams `{"sku":…,"add":1}` in batches of 10 until this one has
    /// exited and 20 batches more (at most 5,000 changes).
    /// - Parameters:
    ///   - whileFrozen: Run as soon as this one is frozen; returns how many changes of `sku` it sent (they count in the
    ///     total).
    ///   - beforeWaking: Run once `newer` is online, before this one wakes.
    /// - Returns: The changes sent, and the time from the freeze until `newer` was online.
    public func wakeAfterTakeover(
        by newer: StoreProcess, sku: String, whileFrozen: @Sendable () async throws -> Int = { 0 },
        beforeWaking: @Sendable () async throws -> Void = {}
    ) async throws -> (sent: Int, takeover: Duration) {
        let process = try launchedProcess()
        let client = StoreClient(connection: statusBroker, topics: try RestockTopics(store: StoreID("apple")))
        process.send(SIGSTOP)
        let frozen = ContinuousClock.now
        let sentWhileFrozen = try await whileFrozen()
        // A deadline, not a measure: beside the whole of make test each read of the status can take seconds (20 s failed).
        try await waitUntil("the frozen store's heartbeat to go stale", within: 60, pollEvery: .milliseconds(250)) {
            (try? await client.status())?.isLive(at: Date()) == false
        }
        try await newer.start()
        let takeover = ContinuousClock.now - frozen
        try await beforeWaking()
        let batch = (0..<10).map { _ in (topic: "restock/apple/admin/stock", payload: Array(#"{"sku":"\#(sku)","add":1}"#.utf8)) }
        process.send(SIGCONT)
        var sent = sentWhileFrozen, afterExit = 0
        while afterExit < 20, sent < 5_000 {
            try await Requests.publish(batch, to: statusBroker.broker.description)
            sent += batch.count
            if exitStatus != nil { afterExit += 1 }
        }
        return (sent, takeover)
    }
}
