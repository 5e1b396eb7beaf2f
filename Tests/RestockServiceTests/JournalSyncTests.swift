import CountedSyncs
import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockPipeline
import Synchronization
import Testing

@testable import RestockMQTT

/// The journaling stage's sync of the request log (docs/architecture.md, "The request log"): a batch goes on to be
/// applied while the log is synced, and is acknowledged only once it is. Syncs are held by a SQLite VFS of the tests'
/// own (Tests/CountedSyncs), through which every connection opened after it is installed goes.
@Suite("The request log's sync on the network thread")
struct JournalSyncTests {
    @Test("a batch is handed on to be applied while its sync is under way, and acknowledged only once the sync has returned")
    func applyOverlapsTheSync() async throws {
        #expect(counted_syncs_install() == 0)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory, store: apple)
        let (wakeups, wakeup) = AsyncStream.makeStream(of: Void.self)
        _ = wakeups
        let requests = HandOff<JournaledRequest>(capacity: 100, wakeup: wakeup)
        let committed = HandOff<CommittedPublication>(capacity: 100, wakeup: wakeup)
        let journal = RequestJournal(
            storage: database, topics: appleTopics, requests: requests, lifecycle: StoreLifecycle(logger: Logger(label: "test")),
            mark: JournalMark(), metrics: StoreMetrics(), fence: DeliveryFence(outboxThrough: 0, committed: committed), witnessWakeup: nil)
        let message = MQTTMessage(
            topic: appleTopics.subscribe(customer("ann")), payload: Array(#"{"sku":"ipad"}"#.utf8), qos: .atLeastOnce, retain: false)

        let wal = directory.resolvingSymlinksInPath().appendingPathComponent(RequestLog.fileName + "-wal").path
        counted_syncs_hold(wal)
        defer { counted_syncs_release(wal) }
        // The network thread's call, on a thread of its own: it blocks in the sync.
        let dispositions = Mutex<[MQTTInboundDisposition]?>(nil)
        Thread {
            let recorded = journal.record(batch: [message], number: 1)
            dispositions.withLock { $0 = recorded }
        }.start()

        let handedOn = Mutex<[JournaledRequest]>([])
        try await waitUntil("the request handed on to be applied while its sync waits", within: 10) {
            if case .items(let items) = requests.take(upTo: 10) { handedOn.withLock { $0 += items } }
            return !handedOn.withLock { $0.isEmpty } && counted_syncs_waiting(wal) > 0
        }
        #expect(handedOn.withLock { $0.map(\.topic) } == [message.topic])
        #expect(dispositions.withLock { $0 } == nil, "acknowledged before its sync returned")

        counted_syncs_release(wal)
        try await waitUntil("the batch acknowledged once synced", within: 10) { dispositions.withLock { $0 } != nil }
        #expect(dispositions.withLock { $0 } == [.recorded])
        #expect(counted_syncs_of(wal) >= 1)
    }
}
