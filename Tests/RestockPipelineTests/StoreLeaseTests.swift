import Deadlines
import Foundation
import Testing

@testable import RestockPipeline

/// The data directory's lease (docs/architecture.md, "Ownership: the lease"): its epoch rises by one with every new
/// owner, and once a newer owner holds it a commit and a journal append of the older one are refused with `leaseLost`
/// and change nothing.
@Suite("Store lease")
struct StoreLeaseTests {
    typealias Directory = PipelineTests.Directory
    typealias Stage = PipelineTests.Stage

    /// A second owner takes the lease over from `database` (a standby that judged it frozen: it holds no lock).
    static func takeOver(_ database: StoreDatabase, as instance: String) throws -> StoreDatabase {
        try StoreDatabase(
            directory: database.directory, store: apple, claim: .takeover(instance: instance, lock: nil, seen: database.lease.holder()))
    }

    static func expectLeaseLost(to owner: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("an owner whose lease was taken over wrote")
        } catch let error as StorageError {
            #expect(error.kind == .leaseLost, "\(error)")
            #expect(error.leaseLost?.owner == owner, "\(error)")
            #expect(!error.isRetriable)
        } catch {
            Issue.record("refused for another reason: \(error)")
        }
    }

    @Test("the epoch rises by one with every takeover, and the lease names its owner")
    func epochRises() throws {
        let directory = Directory()
        let first = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let start = try first.lease.holder()
        #expect(start.owner == "aaaaaaaaaaaa" && start.holdsLock && start.epoch == 1)
        let second = try Self.takeOver(first, as: "bbbbbbbbbbbb")
        let third = try Self.takeOver(second, as: "cccccccccccc")
        let holder = try third.lease.holder()
        #expect(holder.epoch == 3 && holder.owner == "cccccccccccc" && !holder.holdsLock)
        #expect(second.lease.fence.heldEpoch == 2 && third.lease.fence.heldEpoch == 3)
    }

    @Test("of two takeovers from the same lease, one wins; an owner that renewed meanwhile keeps it")
    func compareAndSwap() throws {
        let directory = Directory()
        let first = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let seen = try first.lease.holder()
        try first.lease.renew(at: Date())
        Self.expectLeaseLost(to: "aaaaaaaaaaaa") {
            _ = try StoreDatabase(directory: directory.url, store: apple, claim: .takeover(instance: "bbbbbbbbbbbb", lock: nil, seen: seen))
        }
        let renewed = try first.lease.holder()
        _ = try StoreDatabase(directory: directory.url, store: apple, claim: .takeover(instance: "bbbbbbbbbbbb", lock: nil, seen: renewed))
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") {
            _ = try StoreDatabase(directory: directory.url, store: apple, claim: .takeover(instance: "cccccccccccc", lock: nil, seen: renewed))
        }
        #expect(try first.lease.holder().epoch == 2)
    }

    @Test("a journal append with a stale epoch throws leaseLost and appends nothing")
    func staleAppend() throws {
        let directory = Directory()
        let old = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let request = PipelineTests.subscribe("alice", "ipad")
        try old.journal(topic: request.topic, payload: request.payload)
        let new = try Self.takeOver(old, as: "bbbbbbbbbbbb")
        let before = try new.queueLengths().inbox
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") { try old.journal(topic: request.topic, payload: request.payload) }
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") {
            _ = try old.journal(batch: [(request.topic, request.payload, request.payload.count, false), (request.topic, request.payload, request.payload.count, false)])
        }
        #expect(try new.queueLengths().inbox == before)
        #expect(before == 1)
        // The new owner appends.
        try new.journal(topic: request.topic, payload: request.payload)
        #expect(try new.queueLengths().inbox == 2)
    }

    @Test("a commit with a stale epoch throws leaseLost and changes nothing; the renewal and the check say so too")
    func staleCommit() throws {
        let directory = Directory()
        let old = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let stage = try Stage(old)
        try stage.journal(["alice", "bob"], to: "ipad", in: old)
        let new = try Self.takeOver(old, as: "bbbbbbbbbbbb")
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") { try stage.processor.drainInbox() }
        let snapshot = try new.loadSnapshot()
        #expect(snapshot.watches.isEmpty)
        #expect(try new.processedThrough() == 0)
        #expect(try new.queueLengths().outbox == 0)
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") { try old.lease.renew(at: Date()) }
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") { try old.lease.check() }
        // The new owner applies both requests from the log.
        let applying = try Stage(new)
        #expect(try applying.processor.drainInbox() == 2)
        #expect(try new.loadSnapshot().watches.count == 2)
        try new.lease.check()
    }

    @Test("the check before a round of publishing reads nothing for four fifths of the lifetime after a renewal began (no standby can take over sooner), and reads the lease after that")
    func checkAfterARenewal() async throws {
        let directory = Directory()
        let owner = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let began = ContinuousClock.now
        try owner.lease.renew(at: Date())
        // A takeover at once, as no standby makes one (a standby waits for the renewals to stand still for the lifetime):
        // only the check's own reading can see it.
        let taken = try Self.takeOver(owner, as: "bbbbbbbbbbbb")
        try owner.lease.check()
        #expect(ContinuousClock.now - began < LeaseHolder.surelyHeld(lifetime: StoreLease.lifetime), "the check came too late to tell")
        try await waitUntil("the check to read the takeover", within: 30) { (try? owner.lease.check()) == nil }
        #expect(ContinuousClock.now - began >= LeaseHolder.surelyHeld(lifetime: StoreLease.lifetime))
        Self.expectLeaseLost(to: "bbbbbbbbbbbb") { try owner.lease.check() }
        withExtendedLifetime(taken) {}
    }

    @Test("a takeover while another process holds the request log's write lock fails as locked and leaves the lease as it was (found by an outside trial: the state's lease was taken and its epoch not mirrored, and the standby then waited on an owner of no process)")
    func takeoverWithTheLogLocked() async throws {
        let directory = Directory()
        let owner = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let before = try owner.lease.holder()
        let logPath = DataDirectory(directory.url).logPath
        let other = try StalledOwnerTests.LockHolder(path: logPath)
        try await other.held(logPath)
        do {
            _ = try Self.takeOver(owner, as: "bbbbbbbbbbbb")
            Issue.record("taken while the log was locked")
        } catch let error as StorageError {
            #expect(error.isLocked, "\(error)")
        }
        #expect(try owner.lease.holder() == before)
        try owner.lease.renew(at: Date())
        withExtendedLifetime(other) {}
    }

    @Test("a normal start is refused while another instance renews a lease it took without the lock")
    func normalStartRefused() throws {
        let directory = Directory()
        let old = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let new = try Self.takeOver(old, as: "bbbbbbbbbbbb")
        old.releaseDirectory()  // the frozen process exits: its lock goes
        do {
            _ = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "cccccccccccc"))
            Issue.record("a normal start took a lease another instance renews")
        } catch RestockMQTTError.dataDirectoryLeased(let path, let owner) {
            #expect(path == directory.url.path && owner == "bbbbbbbbbbbb")
        }
        // Released at a clean stop, it is free at once.
        new.lease.release()
        let next = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "cccccccccccc"))
        #expect(try next.lease.holder().epoch == 3)
    }

    @Test("a standby's watch judges a lease lapsed only after its lifetime without a renewal, by its own clock")
    func watch() {
        var watch = LeaseWatch(lifetime: .seconds(5))
        let start = ContinuousClock.now
        var holder = StoreLease.Holder(epoch: 4, owner: "aaaaaaaaaaaa", renewals: 10, renewedAt: .distantFuture, holdsLock: false)
        var seen: [Bool] = []
        seen.append(watch.lapsed(holder, at: start))
        seen.append(watch.lapsed(holder, at: start + .seconds(4)))
        holder.renewals += 1
        seen.append(watch.lapsed(holder, at: start + .seconds(6)))  // renewed: its time starts again
        seen.append(watch.lapsed(holder, at: start + .seconds(10)))
        seen.append(watch.lapsed(holder, at: start + .seconds(11)))
        #expect(seen == [false, false, false, false, true])
        holder.owner = ""
        var released = LeaseWatch()
        let lapsed = released.lapsed(holder, at: start)
        #expect(lapsed)
        // Released by a holder of the lock: its lock wakes the standby; only if it kept the lock past the lifetime does
        // the lease count as lapsed.
        holder.holdsLock = true
        var lockHeld = LeaseWatch(lifetime: .seconds(5))
        let looks = [lockHeld.lapsed(holder, at: start), lockHeld.lapsed(holder, at: start + .seconds(4)), lockHeld.lapsed(holder, at: start + .seconds(5))]
        #expect(looks == [false, false, true])
    }

    @Test("a store that took over without the lock takes it when the frozen process lets it go, and notes it: a normal start is then refused by the lock, whatever its clock")
    func lockAdoptedAfterTakeover() async throws {
        let directory = Directory()
        let old = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        let new = try Self.takeOver(old, as: "bbbbbbbbbbbb")
        #expect(!new.holdsLock)
        let adoption = Task { try await new.adoptTheLockWhenFree() }
        old.releaseDirectory()  // the frozen process ends
        #expect(try await adoption.value)
        #expect(new.holdsLock)
        #expect(try new.lease.holder().holdsLock)
        // A clock far ahead reads the lease as stale; the lock refuses all the same.
        #expect(throws: RestockMQTTError.dataDirectoryInUse(directory.url.path)) {
            try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "cccccccccccc"), now: Date() + 3_600)
        }
        // Released at a clean stop: the lease keeps `locked`, so a standby waits for the lock rather than taking it.
        new.lease.release()
        #expect(try new.lease.holder().isReleased && new.lease.holder().holdsLock)
        new.releaseDirectory()
        let next = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "cccccccccccc"))
        #expect(try next.lease.holder().epoch == 3)
    }
}
