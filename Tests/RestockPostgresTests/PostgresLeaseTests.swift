import Deadlines
import Foundation
import Logging
import PostgresNIO
import RestockCore
import RestockTestSupport
import Synchronization
import Testing

@testable import RestockPipeline
@testable import RestockPostgres

extension PostgresServerTests {
    /// The lease in PostgreSQL (docs/architecture.md, "Ownership: the lease"): a normal start refused while another owner
    /// renews; a takeover's compare-and-swap; every write of an older owner fenced; the lapse judged on the database's clock.
    @Suite("PostgreSQL lease")
    struct PostgresLeaseTests {
        static func open(_ server: PrivatePostgres, as instance: String, store: StoreID = apple) throws -> PostgresStoreStorage {
            try #require(try server.backend.open(for: store, claim: .exclusive(instance: instance), now: Date()) as? PostgresStoreStorage)
        }

        /// The settings of `server` with a lease of `lifetime`, their backend, and the storage of instance aaaaaaaaaaaa
        /// that took the lease of `apple` there.
        static func owned(
            _ server: PrivatePostgres, lifetime: Duration
        ) throws -> (settings: PostgresSettings, backend: PostgresStorage, owner: PostgresStoreStorage) {
            var settings = server.settings
            settings.leaseLifetime = lifetime
            let backend = PostgresStorage(settings: settings)
            let owner = try #require(try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date()) as? PostgresStoreStorage)
            return (settings, backend, owner)
        }

        /// The lease of `storage`'s store as the seam describes it, for a takeover's `seen`.
        static func seen(_ storage: PostgresStoreStorage) throws -> LeaseHolder {
            try #require(try storage.lease.holder()).storeLeaseHolder
        }

        /// The value of `task` within `seconds`; cancels the task when the time is up (awaiting a task's value does not
        /// end with the awaiting task's cancellation by itself).
        static func value<T: Sendable>(of task: Task<T, any Error>, within seconds: Double) async throws -> T {
            try await withDeadline(seconds, waitingFor: "the standby's wait") {
                try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            }
        }

        static func expectLeaseLost(to owner: String, epoch: Int64, _ what: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(what): an owner whose lease was taken over wrote")
            } catch let error as StorageError {
                #expect(error.kind == .leaseLost, "\(what): \(error)")
                #expect(error.leaseLost == StorageError.leaseLost("", owner: owner, epoch: epoch).leaseLost, "\(what): \(error)")
                #expect(!error.isRetriable)
            } catch {
                Issue.record("\(what): refused for another reason: \(error)")
            }
        }

        @Test("a second normal start is refused while the first renews; the refused one takes nothing")
        func exclusiveRefused() async throws {
            try await PrivatePostgres.with { server in
                let first = try Self.open(server, as: "aaaaaaaaaaaa")
                try first.ownership.renew(at: Date())
                #expect(throws: RestockMQTTError.dataDirectoryLeased(server.backend.location, owner: "aaaaaaaaaaaa")) {
                    _ = try server.backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                }
                let holder = try #require(try first.lease.holder())
                #expect(holder.epoch == 1 && holder.owner == "aaaaaaaaaaaa" && holder.renewals == 1 && !holder.released)
                try first.ownership.check()
                _ = try first.journal(batch: [request()])
            }
        }

        @Test("a takeover with the lease as seen raises the epoch, and every write of the old owner then throws leaseLost naming the new one")
        func takeoverFences() async throws {
            try await PrivatePostgres.with { server in
                let old = try Self.open(server, as: "aaaaaaaaaaaa")
                let journaled = try old.journal(batch: [request()])
                var changes = StoreChanges()
                changes.save(Watch(customer: customer("c0"), sku: sku("s0"), mode: .once, minQuantity: 1, position: 1, since: Date()))
                changes.publications = [Publication(key: "k", topic: "t", payload: [1], retain: false)]
                let placed = try old.commit(changes)
                let new = try #require(
                    try server.backend.open(for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: Self.seen(old))), now: Date())
                        as? PostgresStoreStorage)
                #expect(new.lease.fence.heldEpoch == 2)
                let before = try new.loadSnapshotReportingSkipped().snapshot
                let queues = try new.queueLengths()
                let error = Publication(key: "e", topic: "t", payload: [2], retain: false)
                let writes: [(String, () throws -> Void)] = [
                    ("journal", { _ = try old.journal(batch: [request()]) }),
                    ("commit", { _ = try old.commit(changes) }),
                    ("acknowledge", { try old.acknowledge(messages: placed.map(\.seq), batches: []) }),
                    ("dead letter", { _ = try old.deadLetter(journaled[0], error: error, reason: "r", at: Date()) }),
                    ("trim", { try old.trimJournal(through: 1) }),
                    ("attempt", { try old.beginAttempt(Attempt(first: 1, last: 1, suspectsThrough: 0), kills: 0) }),
                    ("probe", { try old.probeJournal() }),
                    ("renew", { try old.ownership.renew(at: Date()) }),
                    ("check", { try old.ownership.check() }),
                ]
                for (what, write) in writes { Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, what, write) }
                #expect(try new.loadSnapshotReportingSkipped().snapshot == before)
                #expect(try new.queueLengths() == queues && queues.inbox == 1 && queues.outbox == 1)
                #expect(try new.deadLetterList().isEmpty && new.lastAttempt() == nil)
                old.ownership.release()
                #expect(try new.lease.holder()?.released == false, "a lost lease is not released")
                _ = try new.commit(changes)
                try new.ownership.renew(at: Date())
            }
        }

        @Test("a takeover from a lease seen before a renewal is refused, naming the owner that renewed; another standby's win refuses the second")
        func staleTakeoverRefused() async throws {
            try await PrivatePostgres.with { server in
                let first = try Self.open(server, as: "aaaaaaaaaaaa")
                let seen = try Self.seen(first)
                try first.ownership.renew(at: Date())
                let takeover = { (instance: String, seen: LeaseHolder) throws in
                    _ = try server.backend.open(for: apple, claim: .takeover(instance: instance, StandbyTakeover(hold: nil, seen: seen)), now: Date())
                }
                Self.expectLeaseLost(to: "aaaaaaaaaaaa", epoch: 1, "stale") { try takeover("bbbbbbbbbbbb", seen) }
                #expect(try first.lease.holder()?.epoch == 1)
                try first.ownership.check()
                let renewed = try Self.seen(first)
                try takeover("bbbbbbbbbbbb", renewed)
                Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, "second standby") { try takeover("cccccccccccc", renewed) }
            }
        }

        @Test("the publisher's check of the lease costs no round trip for four fifths of the lifetime after a renewal was sent (no standby can take over sooner), and reads the lease after that")
        func checkAfterARenewal() async throws {
            try await PrivatePostgres.with { server in
                let (_, backend, owner) = try Self.owned(server, lifetime: .seconds(2))
                let sent = ContinuousClock.now
                try owner.ownership.renew(at: Date())
                // A takeover at once, as no standby makes one (a standby waits for the renewals to stand still for the
                // lifetime): only the check's own reading can see it.
                let taken = try backend.open(
                    for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: Self.seen(owner))), now: Date())
                try owner.ownership.check()
                #expect(ContinuousClock.now - sent < PostgresLease.surelyHeld(lifetime: .seconds(2)), "the check came too late to tell")
                try await waitUntil("the check to read the takeover", within: 30) {
                    do {
                        try owner.ownership.check()
                        return false
                    } catch { return true }
                }
                #expect(ContinuousClock.now - sent >= PostgresLease.surelyHeld(lifetime: .seconds(2)))
                Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, "the check past the renewal's time") { try owner.ownership.check() }
                withExtendedLifetime(taken) {}
            }
        }

        @Test("a released lease is taken at once by a normal start, and by a standby's wait")
        func releasedTakenAtOnce() async throws {
            try await PrivatePostgres.with { server in
                let first = try Self.open(server, as: "aaaaaaaaaaaa")
                try first.ownership.renew(at: Date())
                let backend = server.backend
                let wait = Task { try await backend.waitForTheOwnerToGo(of: apple) }
                first.ownership.release()
                first.releaseDirectory()
                let seen = try #require(try await Self.value(of: wait, within: 60).seen)
                #expect(seen.isReleased && seen.epoch == 1 && !seen.holdsLock)
                let next = try Self.open(server, as: "bbbbbbbbbbbb")
                #expect(next.lease.fence.heldEpoch == 2)
                #expect(throws: StorageError.self) { _ = try first.journal(batch: [request()]) }
            }
        }

        @Test("the lapse is judged on the database's clock: not by the opener's, and only once the owner has not renewed for the lifetime")
        func lapseOnTheDatabaseClock() async throws {
            try await PrivatePostgres.with { server in
                // A lifetime of a minute, so that "still held" holds on a loaded machine; lapses are made by dating the
                // renewal past it, on the database's clock.
                let (settings, backend, owner) = try Self.owned(server, lifetime: .seconds(60))
                // A start whose own clock is an hour ahead is refused all the same: the database's clock judges.
                #expect(throws: RestockMQTTError.self) {
                    _ = try backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date() + 3_600)
                }
                // Dated by the database 3 s ahead of its clock: within the lifetime either way, as SQLite's `isFresh` reads a
                // clock off either way.
                _ = try await server.psql("UPDATE restock_lease SET renewed_at = now() + interval '3 seconds' WHERE store = 'apple'")
                #expect(throws: RestockMQTTError.self) {
                    _ = try backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                }
                // While the lease is fresh, a standby's wait does not return; timed out, it is cancelled, and ends so.
                let wait = Task { try await backend.waitForTheOwnerToGo(of: apple) }
                await #expect(throws: DeadlineExceeded.self) { _ = try await Self.value(of: wait, within: 2.5) }
                await #expect(throws: CancellationError.self) { _ = try await Self.value(of: wait, within: 60) }
                // Renewed 61 s ago by the database's clock: lapsed, whatever the opener's clock says (an hour behind here). A
                // standby (of a 3 s lifetime, so that the test is short) takes it once it has seen it stand still for that
                // long itself: the database's clock runs on while the database is away, and the owner is given a lifetime
                // to renew once it is back.
                _ = try await server.psql("UPDATE restock_lease SET renewed_at = now() - interval '61 seconds' WHERE store = 'apple'")
                var quick = settings
                quick.leaseLifetime = .seconds(3)
                let quickBackend = PostgresStorage(settings: quick)
                let before = await server.sessions()
                let renewedInTime = Task { try await quickBackend.waitForTheOwnerToGo(of: apple) }
                // The standby's first look, on a lapsed lease (its connection is up); then the owner renews.
                try await waitUntil("the standby's connection", within: 30) { await server.sessions() > before }
                try owner.ownership.renew(at: Date())
                _ = try await server.psql("UPDATE restock_lease SET renewed_at = now() - interval '61 seconds' WHERE store = 'apple'")
                await #expect(throws: DeadlineExceeded.self, "a lease renewed within a lifetime of the standby's first look is not taken") {
                    _ = try await Self.value(of: renewedInTime, within: 2.5)
                }
                renewedInTime.cancel()
                let standby = Task { try await quickBackend.waitForTheOwnerToGo(of: apple) }
                let seen = try #require(try await Self.value(of: standby, within: 60).seen)
                #expect(seen.owner == "aaaaaaaaaaaa" && !seen.isReleased)
                let next = try #require(
                    try backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date() - 3_600) as? PostgresStoreStorage)
                #expect(next.lease.fence.heldEpoch == 2)
                Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, "lapsed owner") { try owner.ownership.renew(at: Date()) }
            }
        }
    
        @Test("a database away for longer than the lease's lifetime: the standby gives the owner a lifetime from its first look once the server is back, and the owner, renewing then, keeps its lease (found by CI: a lease last seen before the outage was taken at once)")
        func outageLongerThanTheLifetime() async throws {
            try await PrivatePostgres.with { server in
                let (settings, _, owner) = try Self.owned(server, lifetime: .seconds(3))
                let before = await server.sessions()
                let standby = Task { try await PostgresStorage(settings: settings).waitForTheOwnerToGo(of: apple) }
                try await waitUntil("the standby's connection", within: 30) { await server.sessions() > before }
                // Away for longer than the lifetime: every lease reads lapsed by the database's clock once it is back.
                try await server.stop()
                let stopped = ContinuousClock.now
                try await waitUntil("an outage of 4 s", within: 30) { ContinuousClock.now - stopped > .seconds(4) }
                try await server.start()
                // The standby's first look after the outage (its connection, the first one made), then the owner's renewal.
                try await waitUntil("the standby's connection after the outage", within: 30) { await server.sessions() > 0 }
                try owner.ownership.renew(at: Date())
                await #expect(throws: DeadlineExceeded.self, "the standby took a lease its owner renewed within a lifetime of the server's return") {
                    _ = try await Self.value(of: standby, within: 2.5)
                }
                standby.cancel()
            }
        }

        @Test("an owner frozen inside a transaction, holding the lease's row, does not keep a standby out: the server ends its session after the lease's lifetime, and the takeover goes through (found by an outside trial: it waited as long as the freeze)")
        func frozenInsideATransaction() async throws {
            try await PrivatePostgres.with { server in
                let (settings, backend, owner) = try Self.owned(server, lifetime: .seconds(2))
                let seen = try Self.seen(owner)
                // A session of the store's kind, frozen in the middle of a write: its fence's share lock on the lease row held.
                let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let frozen = try await PostgresConnection.connect(
                    on: group.next(), configuration: PostgresSession.configuration(of: settings, server: settings.servers[0]), id: 1,
                    logger: Logger(label: "test")
                ).get()
                _ = try await frozen.query("BEGIN", logger: Logger(label: "test")).get()
                _ = try await frozen.query("SELECT epoch FROM restock_lease WHERE store = 'apple' FOR SHARE", logger: Logger(label: "test")).get()
                // The takeover's update waits for that lock (up to the lock timeout, 5 s), and gets it when the server ends
                // the idle transaction after 2 s.
                let takeover = Result { try backend.open(for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: seen)), now: Date()) }
                _ = try? await frozen.close().get()
                try await group.shutdownGracefully()
                #expect((try takeover.get() as? PostgresStoreStorage)?.lease.fence.heldEpoch == 2)
            }
        }

        @Test("a renewal passes a long fenced write (its own connection, a lock the fence lets through), while a takeover waits for the write to end, and the write it waited for commits")
        func renewalPassesALongWrite() async throws {
            try await PrivatePostgres.with { server in
                let owner = try Self.open(server, as: "aaaaaaaaaaaa")
                let inside = Mutex(false), done = Mutex(false)
                // A write that holds the lease's row for 3 s, as a fan-out's commit to very many customers does.
                let longWrite = { @Sendable () throws -> Void in
                    try owner.write { statements in
                        inside.withLock { $0 = true }
                        try statements.execute("SELECT pg_sleep(3)")
                        try statements.execute("UPDATE restock_store SET journal_place = journal_place + 1 WHERE store = 'apple'")
                    }
                    done.withLock { $0 = true }
                }
                let writing = Self.inBackground(longWrite)
                try await waitUntil("the write inside its transaction", within: 30) { inside.withLock { $0 } }
                try owner.ownership.renew(at: Date())
                #expect(!done.withLock { $0 }, "the renewal waited for the write to end")
                try await writing.value

                // A takeover while another long write is under way waits for it; the write commits, the next is refused.
                inside.withLock { $0 = false }
                done.withLock { $0 = false }
                let place = try await server.psql("SELECT journal_place FROM restock_store WHERE store = 'apple'")
                let seen = try Self.seen(owner)
                let second = Self.inBackground(longWrite)
                try await waitUntil("the second write inside its transaction", within: 30) { inside.withLock { $0 } }
                let standby = try server.backend.open(
                    for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", StandbyTakeover(hold: nil, seen: seen)), now: Date())
                #expect(done.withLock { $0 }, "the takeover did not wait for the write under way")
                try await second.value
                #expect(try await server.psql("SELECT journal_place FROM restock_store WHERE store = 'apple'") == String(Int(place)! + 1))
                Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, "a write after the takeover") { _ = try owner.journal(batch: [request()]) }
                withExtendedLifetime(standby) {}
            }
        }

        @Test("a write of one statement that meets a takeover under way waits for it, then is refused naming the new owner, and writes nothing (the fence in the database, restock_fence)")
        func oneStatementWaitsForATakeover() async throws {
            try await PrivatePostgres.with { server in
                let owner = try Self.open(server, as: "aaaaaaaaaaaa")
                _ = try owner.journal(batch: [request()])
                // A takeover under way: the lease's row locked and changed, not committed yet.
                let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let logger = Logger(label: "test")
                let taking = try await PostgresConnection.connect(
                    on: group.next(), configuration: PostgresSession.configuration(of: server.settings, server: server.settings.servers[0]), id: 1,
                    logger: logger
                ).get()
                _ = try await taking.query("BEGIN", logger: logger).get()
                _ = try await taking.query("SELECT epoch FROM restock_lease WHERE store = 'apple' FOR UPDATE", logger: logger).get()
                _ = try await taking.query(
                    "UPDATE restock_lease SET epoch = epoch + 1, owner = 'bbbbbbbbbbbb', renewals = 0 WHERE store = 'apple'", logger: logger
                ).get()
                let started = Mutex(false)
                let writes: [(String, @Sendable () throws -> Void)] = [
                    ("journal", { _ = try owner.journal(batch: [request()]) }),
                    ("commit", {
                        var changes = StoreChanges()
                        changes.save(Watch(customer: customer("c0"), sku: sku("s0"), mode: .once, minQuantity: 1, position: 1, since: Date()))
                        _ = try owner.commit(changes)
                    }),
                    ("attempt", { try owner.beginAttempt(Attempt(first: 1, last: 1, suspectsThrough: 0), kills: 0) }),
                ]
                let waiting = writes.map { what, write in
                    (what, Self.inBackground {
                        started.withLock { $0 = true }
                        Self.expectLeaseLost(to: "bbbbbbbbbbbb", epoch: 2, what, write)
                    })
                }
                try await waitUntil("the writes to wait for the lease's row", within: 30) {
                    guard started.withLock({ $0 }) else { return false }
                    return try await server.psql("SELECT count(*) FROM pg_locks WHERE NOT granted") == "1"
                }
                _ = try await taking.query("COMMIT", logger: logger).get()
                for (_, task) in waiting { try await task.value }
                #expect(try await server.psql("SELECT journal_place FROM restock_store WHERE store = 'apple'") == "1")
                #expect(try await server.psql("SELECT count(*) FROM restock_watch") == "0")
                #expect(try await server.psql("SELECT count(*) FROM restock_attempt") == "0")
                try await taking.close().get()
                try await group.shutdownGracefully()
            }
        }

        /// Runs `body` on a thread of its own (it blocks on the database), as a task whose value is its end.
        static func inBackground(_ body: @escaping @Sendable () throws -> Void) -> Task<Void, any Error> {
            Task {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
                }
            }
        }
    }
}
