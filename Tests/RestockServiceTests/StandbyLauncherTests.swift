import Deadlines
import Foundation
import Logging
import RestockPipeline
import RestockTestSupport
import ServiceLifecycle
import Testing

@testable import RestockMQTT

/// `restock serve --standby` through the storage seam on a backend that is not SQLite: the launcher waits through the
/// backend (``StoreStorageBackend/waitForTheOwnerToGo(of:)``), never on a data directory.
@Suite("A standby on the memory backend", .timeLimit(.minutes(2)))
struct StandbyLauncherTests {
    @Test("the standby waits while the live store runs, and takes over with its state once it stopped")
    func takesOverWhenTheOwnerStops() async throws {
        let broker = InMemoryBroker()
        let volume = InMemoryVolume()
        let live = LaunchedStore(standby: false, on: broker, backend: InMemoryStorageBackend(volume: volume))
        try await withDeadline(30, waitingFor: "the live store online") { try await live.health.waitUntilOnline() }
        let standby = LaunchedStore(standby: true, on: broker, backend: InMemoryStorageBackend(volume: volume))
        try await waitUntil("the standby to wait", within: 30) { standby.log.text.contains("standby for store apple") }
        #expect(standby.log.text.contains("on \(volume.name)"), "\(standby.log.text)")
        #expect(volume.lease.owner != "" && !standby.log.text.contains("online"))
        let firstEpoch = volume.lease.epoch
        // /readyz names where the state is and the lease this process holds (issue 34: it named neither).
        let detail = try #require(live.health.storageDetail)
        #expect(detail.hasPrefix("state in \(volume.name), lease epoch \(firstEpoch) renewed "), "\(detail)")
        #expect(try #require(live.health.leaseAge) < LeaseHolder.lifetime.seconds)
        #expect(standby.health.storageDetail == nil, "a standby holds no lease")

        await live.group.triggerGracefulShutdown()
        try await live.run.value
        try await withDeadline(30, waitingFor: "the standby online") { try await standby.health.waitUntilOnline() }
        #expect(standby.log.text.contains("the live store process stopped: this standby takes over"), "\(standby.log.text)")
        #expect(volume.lease.epoch == firstEpoch + 1)
        #expect(standby.health.storageDetail?.contains("lease epoch \(firstEpoch + 1) renewed") == true, "\(standby.health.storageDetail ?? "nil")")
        await standby.group.triggerGracefulShutdown()
        try await standby.run.value
    }
}
