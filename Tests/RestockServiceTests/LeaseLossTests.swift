import Deadlines
import Foundation
import Logging
import RestockPipeline
import RestockTestSupport
import Testing

@testable import RestockMQTT

/// A store whose lease a newer owner took stops, whatever it is doing then (issue 33's second outside trial: one still
/// starting, and one waiting for the directory's lock, went on for ever and ignored SIGTERM).
@Suite("A lost lease ends the store", .timeLimit(.minutes(2)))
struct LeaseLossTests {
    @Test("a store still starting (its broker away) when a newer owner takes the lease ends with leaseLost, naming it")
    func lostWhileStarting() async throws {
        let broker = InMemoryBroker()
        broker.stop()  // the start waits for the broker
        let volume = InMemoryVolume()
        let store = try RunningStore(on: broker, storage: .memory(volume))
        try await waitUntil("the store to begin its start", within: 30) { store.log.text.contains("restored") || volume.isInUse }
        let newer = try InMemoryStorageBackend(volume: volume).open(
            for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: nil)), now: Date())
        let result = try await store.result(within: 30)
        guard case .failure(let error as StorageError) = result else {
            Issue.record("the store's run ended with \(result), not a lost lease")
            return
        }
        #expect(error.kind == .leaseLost && error.leaseLost?.owner == "bbbbbbbbbbbb", "\(error)")
        #expect(!store.log.text.contains("online"), "\(store.log.text)")
        _ = newer
    }

    @Test("the renewal of a store that took over without the directory's lock ends with leaseLost while it still waits for that lock")
    func lostWhileWaitingForTheLock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lease-loss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The first owner, frozen: it keeps the lock. The second took its lease over without the lock.
        let frozen = try StoreDatabase(directory: directory, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let owner = try StoreDatabase(
            directory: directory, store: apple, claim: .takeover(instance: "bbbbbbbbbbbb", lock: nil, seen: try frozen.lease.holder()))
        #expect(!owner.holdsLock)
        let lifecycle = StoreLifecycle(logger: Logger(label: "test"))
        let renewal = LeaseRenewal(storage: owner, lifecycle: lifecycle, interval: .milliseconds(50), clock: .continuous, logger: Logger(label: "test"))
        let ended = Latch()
        let run = Task {
            defer { _ = ended.open() }
            try await renewal.run()
        }
        // A third takes it over from the second.
        _ = try StoreDatabase(
            directory: directory, store: apple, claim: .takeover(instance: "cccccccccccc", lock: nil, seen: try owner.lease.holder()))
        guard await ended.wait(timeout: .seconds(20)) else {
            Issue.record("the renewal went on, waiting for the lock")
            run.cancel()
            return
        }
        #expect(lifecycle.leaseLost != nil)
        let outcome = await run.result
        guard case .failure(let error as StorageError) = outcome else {
            Issue.record("the renewal ended with \(outcome), not a lost lease")
            return
        }
        #expect(error.kind == .leaseLost && error.leaseLost?.owner == "cccccccccccc", "\(error)")
        _ = frozen
    }
}
