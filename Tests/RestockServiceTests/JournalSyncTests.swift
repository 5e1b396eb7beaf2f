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
    /// A request log in a directory of its own, its journaling stage, and one request for it.
    struct Rig {
        let directory: URL
        let requests: HandOff<JournaledRequest>
        let journal: RequestJournal
        let message: MQTTMessage
        /// The log's write-ahead log, whose syncs a test holds.
        let wal: String

        init(lifecycle: StoreLifecycle) throws {
            #expect(counted_syncs_install() == 0)
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-sync-\(UUID().uuidString)")
            let database = try StoreDatabase(directory: directory, store: apple)
            let (_, wakeup) = AsyncStream.makeStream(of: Void.self)
            requests = HandOff<JournaledRequest>(capacity: 100, wakeup: wakeup)
            let committed = HandOff<CommittedPublication>(capacity: 100, wakeup: wakeup)
            journal = RequestJournal(
                storage: database, topics: appleTopics, requests: requests, lifecycle: lifecycle, mark: JournalMark(),
                metrics: StoreMetrics(), fence: DeliveryFence(outboxThrough: 0, committed: committed), witnessWakeup: nil)
            message = MQTTMessage(
                topic: appleTopics.subscribe(customer("ann")), payload: Array(#"{"sku":"ipad"}"#.utf8), qos: .atLeastOnce, retain: false)
            wal = directory.resolvingSymlinksInPath().appendingPathComponent(RequestLog.fileName + "-wal").path
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("a batch is handed on to be applied while its sync is under way, and acknowledged only once the sync has returned")
    func applyOverlapsTheSync() async throws {
        let rig = try Rig(lifecycle: StoreLifecycle(logger: Logger(label: "test")))
        defer { rig.remove() }
        let (requests, journal, message, wal) = (rig.requests, rig.journal, rig.message, rig.wal)
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

    /// A journal whose sync never returns (a filesystem that hangs, a database that answers nothing) fails no call: the
    /// store is not ready once the journal's step has waited 2 s, and ready again once the sync returns.
    @Test("a journal step left waiting on its sync: not ready after 2 s, with the stage; ready again once it returns")
    func journalStepUnanswered() async throws {
        let log = LogCapture()
        let lifecycle = StoreLifecycle(logger: Logger(label: "test", factory: { _ in log }))
        lifecycle.sessionConnected()
        let rig = try Rig(lifecycle: lifecycle)
        defer { rig.remove() }
        let (journal, message, wal) = (rig.journal, rig.message, rig.wal)
        counted_syncs_hold(wal)
        defer { counted_syncs_release(wal) }
        let started = ContinuousClock.now
        let dispositions = Mutex<[MQTTInboundDisposition]?>(nil)
        Thread {
            let recorded = journal.record(batch: [message], number: 1)
            dispositions.withLock { $0 = recorded }
        }.start()
        try await waitUntil("not ready", within: 30) { lifecycle.notReadyReason() != nil }
        let said = lifecycle.notReadyReason() ?? ""
        #expect(said.hasPrefix("journaling requests has waited 2."), "\(said)")
        #expect(said.hasSuffix("requests wait on the broker until it does (see the log)"), "\(said)")
        #expect(ContinuousClock.now - started >= StorageWait.patience)
        #expect(dispositions.withLock { $0 } == nil, "not acknowledged while its sync waits")

        counted_syncs_release(wal)
        try await waitUntil("acknowledged once synced", within: 10) { dispositions.withLock { $0 } != nil }
        #expect(dispositions.withLock { $0 } == [.recorded])
        #expect(lifecycle.notReadyReason() == nil)
        #expect(log.text.contains(/journaling requests waited [0-9.]+ s for the store's storage/), "the late answer is logged")
    }
}
