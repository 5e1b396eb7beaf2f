import Deadlines
import Foundation
import RestockCore
import RestockMQTT
import RestockPipeline
import Synchronization

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

extension StoreProcess {
    /// Freezes this store (SIGSTOP) at a moment it holds a lock of one of its two files (a transaction, a checkpoint or a
    /// read in progress: `holdingALock`), or at a moment it holds none, waking it again (SIGCONT) and trying anew until
    /// it does; returns the name of the file whose lock it holds. A standby ends a store frozen holding a lock, and
    /// fences one that holds none: a test of either path freezes it so. To catch it holding one, something must keep it
    /// busy meanwhile.
    @discardableResult
    public func freeze(holdingALock: Bool, within seconds: Double = 60) async throws -> String? {
        let process = try launchedProcess()
        let files = [StoreDatabase.fileName, "journal.sqlite"]
        let caught = Mutex<String?>(nil)
        try await waitUntil("the store frozen \(holdingALock ? "while it holds" : "holding no") lock of its files", within: seconds, pollEvery: .milliseconds(3)) {
            process.send(SIGSTOP)
            // Stopped for sure before its locks are read: the signal takes effect on its next turn.
            try await waitUntil("the store stopped", within: 10, pollEvery: .milliseconds(1)) {
                ProcessIdentity.state(of: process.pid) == "stopped"
            }
            let held = files.first { StalledOwner.lockHolder(of: self.dataDirectory.appendingPathComponent($0).path) == process.pid }
            if (held != nil) == holdingALock {
                caught.withLock { $0 = held }
                return true
            }
            process.send(SIGCONT)
            return false
        }
        return caught.withLock { $0 }
    }
}
