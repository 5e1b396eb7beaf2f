import Deadlines
import Foundation
import Logging
import RestockPipeline
import RestockTestSupport
import Testing

@testable import RestockMQTT

/// What `/livez` and `/readyz` answer from (``StoreHealth``), through a store's phases on a broker in memory.
@Suite("Store health")
struct StoreHealthTests {
    func reason(_ check: StoreHealth.Check) -> String? {
        if case .failing(let reason) = check { return reason }
        return nil
    }

    /// A store's health and lifecycle, running with its session up and its lease in PostgreSQL taken at epoch 3, timed by `time`.
    func running(timedBy time: ManualTime) -> (StoreHealth, StoreLifecycle) {
        let health = StoreHealth()
        let lifecycle = StoreLifecycle(logger: Logger(label: "test"))
        health.storing(in: "postgres://restock@db:5432/restock", epoch: 3, now: { time.now })
        health.running(lifecycle)
        lifecycle.sessionConnected()
        return (health, lifecycle)
    }

    /// A store on a broker and a volume in memory, once it is ready.
    func readyStore() async throws -> (broker: InMemoryBroker, volume: InMemoryVolume, store: RunningStore) {
        let broker = InMemoryBroker()
        let volume = InMemoryVolume()
        let store = try RunningStore(on: broker, storage: .memory(volume))
        try await waitUntil("ready", within: 60, pollEvery: .milliseconds(5)) { store.service.health.readiness == .passing }
        return (broker, volume, store)
    }

    /// Waits until `health` is not ready; returns why.
    func notReady(_ health: StoreHealth) async throws -> String {
        try await waitUntil("not ready", within: 60, pollEvery: .milliseconds(5)) { health.readiness != .passing }
        return reason(health.readiness) ?? ""
    }

    /// Waits until `health` is ready again.
    func readyAgain(_ health: StoreHealth) async throws {
        try await waitUntil("ready again", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
    }

    @Test("ready once online; a graceful stop is draining (alive, not ready) until the outbox is drained; then stopped")
    func phases() async throws {
        let broker = InMemoryBroker()
        let store = try RunningStore(on: broker)
        let health = store.service.health
        #expect(health.liveness == .passing)
        try await waitUntil("ready", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
        #expect(broker.status?.isOnline == true)

        // The broker holds its acknowledgements: the drain waits for a mirror's.
        broker.holdAcknowledgements()
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("alice's mirror sent", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: "restock/apple/customers/alice/subscriptions") != nil
        }
        let stopping = Task { await store.stop() }
        try await waitUntil("draining", within: 60, pollEvery: .milliseconds(5)) { reason(health.readiness)?.hasPrefix("draining") == true }
        #expect(health.liveness == .passing)
        broker.releaseAcknowledgements()
        try await stopping.value.get()
        #expect(health.readiness == .failing("stopped"))
        #expect(health.liveness == .failing("stopped"))
    }

    @Test("not ready while its session is down, with the reason; ready again once it is back")
    func sessionDown() async throws {
        let broker = InMemoryBroker()
        let store = try RunningStore(on: broker)
        let health = store.service.health
        try await waitUntil("ready", within: 60, pollEvery: .milliseconds(5)) { health.readiness == .passing }
        broker.stop()
        try await waitUntil("not ready", within: 60, pollEvery: .milliseconds(5)) {
            reason(health.readiness)?.contains("session with the broker is down") == true
        }
        #expect(health.liveness == .passing)
        broker.start()
        try await readyAgain(health)
        #expect(health.liveness == .passing)
        await store.stop()
    }

    @Test("not ready once its lease has gone unrenewed for the lease's lifetime, with the reason; ready again once renewed (an idle store on a stopped database said ok for 20 s)")
    func leaseUnrenewed() {
        let time = ManualTime()
        let (health, _) = running(timedBy: time)
        #expect(health.readiness == .passing)
        time.advance(by: .seconds(4))
        #expect(health.readiness == .passing, "within the lifetime")
        #expect(health.storageDetail == "state in postgres://restock@db:5432/restock, lease epoch 3 renewed 4.0 s ago")
        time.advance(by: .seconds(2))
        let reason = reason(health.readiness)
        #expect(reason == "the store's lease has not been renewed for 6 s: its storage does not answer (see the log); a standby may take the store over")
        health.leaseRenewed(epoch: 3)
        #expect(health.readiness == .passing)
    }

    @Test("not ready as soon as a renewal of its lease fails, with the reason; ready again once one succeeds (a store whose database stopped answered 200 for about 3 s)")
    func leaseRenewalFails() async throws {
        let (_, volume, store) = try await readyStore()
        let health = store.service.health
        volume.refuseLeaseRenewals(true)
        let said = try await notReady(health)
        #expect(said.hasPrefix("the store cannot renew its lease: its storage does not answer ("), "\(said)")
        #expect((health.leaseAge ?? .infinity) < LeaseHolder.lifetime.seconds, "not ready before the lease reads as stale")
        #expect(health.liveness == .passing)
        volume.refuseLeaseRenewals(false)
        try await readyAgain(health)
        await store.stop()
    }

    /// A storage that does not answer at all (a database frozen with SIGSTOP) fails no renewal: the store is not ready
    /// once a renewal has waited 2 s for it, before the lease reads as stale at 5 s, and ready again once it answers.
    @Test("a renewal of the lease left unanswered: not ready after 2 s, ready once it is answered")
    func leaseRenewalUnanswered() async throws {
        let (_, volume, store) = try await readyStore()
        let health = store.service.health
        volume.hold(.leaseRenewals, true)
        let held = ContinuousClock.now
        let said = try await notReady(health)
        #expect(said.hasPrefix("the store cannot renew its lease: its storage has not answered a renewal for 2."), "\(said)")
        #expect(said.contains(" s ago, and a standby may take the store over in "), "counted from the lease's age: \(said)")
        #expect(ContinuousClock.now - held >= StoreHealth.renewalPatience, "not before the renewal has waited 2 s")
        #expect((health.leaseAge ?? .infinity) < LeaseHolder.lifetime.seconds, "not ready before the lease reads as stale")
        #expect(health.liveness == .passing)
        volume.hold(.leaseRenewals, false)
        try await readyAgain(health)
        await store.stop()
    }

    /// A storage that answers nothing holds the lease's renewal and the requests' own calls alike: the lease's reason goes
    /// first, as it says when a standby may take the store over (found by an outside trial: under a frozen database under
    /// load, /readyz said only that requests waited).
    @Test("a lease in doubt is the reason before a stage waiting on the storage")
    func leaseBeforeAWait() async throws {
        let time = ManualTime()
        let (health, lifecycle) = running(timedBy: time)
        let held = DispatchSemaphore(value: 0)
        Thread { lifecycle.applyWait.during { held.wait() } }.start()
        defer { held.signal() }
        try await waitUntil("the wait said", within: 30) { reason(health.readiness)?.hasPrefix("applying requests has waited") == true }
        health.leaseRenewalBegan()
        time.advance(by: .seconds(3))
        let said = reason(health.readiness) ?? ""
        #expect(
            said == "the store cannot renew its lease: its storage has not answered a renewal for 3.0 s; the lease was renewed 3.0 s ago, and a standby may take the store over in 2.0 s",
            "\(said)")
        time.advance(by: .seconds(3))
        #expect(reason(health.readiness)?.hasSuffix("the lease was renewed 6.0 s ago, and a standby may take the store over now") == true)
        health.leaseRenewed(epoch: 3)
        #expect(reason(health.readiness)?.hasPrefix("applying requests has waited") == true)
    }

    /// A storage that answers nothing to the requests' own calls, while the lease's renew (PostgreSQL's statements
    /// connection frozen, its lease connection not): the store is not ready once a batch's commit has waited 2 s for it,
    /// and ready again once it answers; nothing is lost. (The journal's like: JournalSyncTests.journalStepUnanswered.)
    @Test("a batch's commit left unanswered while the lease renews: not ready after 2 s, with the stage; ready and applied once answered")
    func commitUnanswered() async throws {
        let (volume, store) = try await unanswered(.commits, notReadyBecause: "applying requests has waited 2.", "for the store's storage, which does not answer")
        try await waitUntil("alice's watch applied", within: 60, pollEvery: .milliseconds(5)) {
            volume.snapshot().watches.map(\.customer.rawValue) == ["alice"]
        }
        #expect(store.log.text.contains(/applying requests waited [0-9.]+ s for the store's storage/), "the late answer is logged")
        await store.stop()
    }

    /// The same for the outbox: what was committed waits to be sent while its record of the broker's acknowledgements
    /// waits on the storage.
    @Test("not ready once the outbox's record of the broker's acknowledgements has waited 2 s for storage that answers nothing; ready again once it answers, the wait logged")
    func acknowledgementUnanswered() async throws {
        let (_, store) = try await unanswered(
            .acknowledgements, notReadyBecause: "publishing the outbox has waited 2.",
            "for the store's storage, which does not answer: alerts and the other messages committed wait in the outbox")
        #expect(store.log.text.contains(/publishing the outbox waited [0-9.]+ s for the store's storage/), "the late answer is logged")
        await store.stop()
    }

    /// A ready store whose `call`s go unanswered from alice's subscribe on (the subscribe is committed, and its watch list
    /// mirrored: a message of the outbox the broker acknowledges): not ready after 2 s, saying `prefix` and `detail`,
    /// alive, its lease renewed meanwhile; ready again once the calls are answered.
    func unanswered(
        _ call: InMemoryVolume.HeldCall, notReadyBecause prefix: String, _ detail: String
    ) async throws -> (volume: InMemoryVolume, store: RunningStore) {
        let (broker, volume, store) = try await readyStore()
        let health = store.service.health
        volume.hold(call, true)
        defer { volume.hold(call, false) }  // a failed expectation must not leave the store's stop waiting on it
        let started = ContinuousClock.now
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        let said = try await notReady(health)
        #expect(said.hasPrefix(prefix), "\(said)")
        #expect(said.contains(detail), "\(said)")
        #expect(ContinuousClock.now - started >= StorageWait.patience, "not before the call has waited 2 s")
        #expect((health.leaseAge ?? .infinity) < LeaseHolder.lifetime.seconds, "the lease renews meanwhile")
        #expect(health.liveness == .passing)
        volume.hold(call, false)
        try await readyAgain(health)
        return (volume, store)
    }
}
