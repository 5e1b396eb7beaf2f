import Foundation
import RestockCore
import SeededRandom
import Testing

@testable import RestockPipeline

/// The differential test of the storage seam's backends (`RestockPipelineTests`' memory, `RestockPostgresTests`'
/// PostgreSQL): seeded random sequences of operations applied to SQLite, the specification, and to the other backend,
/// every read of ``StoreStorage`` compared after each step. One generator for every backend held to SQLite.
package final class StorageDifferential {
    let directory = ScratchDirectory()
    /// The backend held to SQLite: memory, PostgreSQL.
    let backend: any StoreStorageBackend
    package var sqlite: any StoreStorage
    /// The storage of ``backend``.
    package var other: any StoreStorage
    package var random: SplitMix64
    package let seed: UInt64
    /// The step being made, for messages.
    package var step = ""
    /// The watches made (by key), to change or remove; positions are never given twice.
    var watches: [WatchKey: Watch] = [:]
    var nextPosition: UInt64 = 1
    var nextAlert: UInt64 = 1
    var lastJournaled: Int64 = 0
    /// The last request applied: rises, and never passes the last journaled (SQLite's open checks both halves agree).
    var processed: Int64 = 0
    var journaled: [JournaledRequest] = []
    var deadLetters: [Int64] = []
    var messages = 0
    /// The operations that succeeded on both, by name: the run must have made each kind.
    package var done: Set<String> = []
    /// How many commits both refused (a position saved twice).
    package var conflicts = 0
    /// The dates reports, expiry and commits are made at: around a fixed day.
    package static let base = Date(timeIntervalSince1970: 1_790_000_000)
    package static let customers = (0..<6).map { customer("c\($0)") }
    package static let skus = (0..<4).map { sku("s\($0)") }

    /// A pair made from `seed`, SQLite beside a storage of `backend` (opened now, and again at each reopen).
    package init(seed: UInt64, other backend: any StoreStorageBackend) throws {
        self.seed = seed
        self.backend = backend
        random = SplitMix64(seed: seed)
        sqlite = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        other = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
    }

    func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
    func pick<T>(_ values: [T]) -> T? { values.isEmpty ? nil : values[int(0...values.count - 1)] }
    func date(hours: ClosedRange<Double>) -> Date { Self.base.addingTimeInterval(Double.random(in: hours, using: &random) * 3_600) }

    /// Runs `body` on both storages: both succeed or both throw; returns both results when they succeed.
    @discardableResult
    package func both<T>(_ what: String, _ body: (any StoreStorage) throws -> T) -> (sqlite: T, other: T)? {
        let results = (Result { try body(sqlite) }, Result { try body(other) })
        switch results {
        case (.success(let a), .success(let b)):
            done.insert(what)
            return (a, b)
        case (.failure(let a), .failure(let b)):
            #expect(a is StorageError && b is StorageError && (a as? StorageError)?.kind == (b as? StorageError)?.kind, "\(a) | \(b)")
            if what == "conflicting commit" { conflicts += 1 }
            return nil
        case (.success, .failure(let error)), (.failure(let error), .success):
            Issue.record("seed \(seed), \(step): \(what): only one backend threw \(error)")
            return nil
        }
    }

    /// Expects both storages to give the same answer to `body`, compared as text when it is not `Equatable`.
    package func agree<T>(_ what: String, _ body: (any StoreStorage) throws -> T) {
        guard let (a, b) = both(what, body) else { return }
        #expect(String(reflecting: a) == String(reflecting: b), "seed \(seed), \(step): \(what)")
    }

    // MARK: Steps

    package func randomStep() throws {
        switch int(1...100) {
        case 1...18: journal()
        case 19...55: commit()
        case 56...70: acknowledge()
        case 71...77: deadLetter()
        case 78...82: trim()
        case 83...92: attempt()
        case 93...96: probeInstanceAndRestore()
        default: try reopen()
        }
    }

    func journal() {
        let count = int(0...4)
        let requests = (0..<count).map { _ in
            let payload = Array("{\"sku\":\"s\(int(0...3))\"}".utf8)
            let topic = chance(80) ? appleTopics.subscribe(pick(Self.customers)!) : appleTopics.unsubscribe(pick(Self.customers)!)
            return (topic: topic, payload: payload, size: chance(20) ? payload.count + int(1...9000) : payload.count, retained: chance(10))
        }
        step = "journal \(count)"
        guard let (a, b) = both("journal", { try $0.journal(batch: requests) }) else { return }
        #expect(a == b, "seed \(seed), \(step)")
        journaled += a
        lastJournaled = a.last?.seq ?? lastJournaled
    }

    func newWatch() -> Watch {
        let key = WatchKey(customer: pick(Self.customers)!, sku: pick(Self.skus)!)
        defer { nextPosition += 1 }
        return Watch(
            customer: key.customer, sku: key.sku, mode: chance(50) ? .once : .every,
            minQuantity: chance(3) ? 0 : int(1...5), position: nextPosition, since: date(hours: -100...0),
            isWaiting: chance(80), expiresAt: chance(50) ? date(hours: -30...30) : nil)
    }

    /// A watch saved at a position another watch holds: both refuse the whole commit (SQLite's `UNIQUE` on the
    /// position), and nothing changes.
    func conflictingCommit() {
        guard let holder = pick(watches.values.sorted { $0.position < $1.position }) else { return }
        let other = Self.customers.first { $0 != holder.customer }!
        var changes = StoreChanges()
        changes.save(newWatch())
        changes.save(Watch(customer: other, sku: holder.sku, mode: .once, minQuantity: 1, position: holder.position, since: Self.base))
        changes.publications = [publication()]
        changes.processedThrough = lastJournaled
        step = "conflicting commit at \(holder.position)"
        if both("conflicting commit", { try $0.commit(changes) }) != nil { Issue.record("seed \(seed), \(step): both committed") }
    }

    func commit() {
        if chance(5) { return conflictingCommit() }
        var changes = StoreChanges()
        // In position order, so that a seed makes the same run every time (a dictionary's order changes per process).
        let ordered = watches.values.sorted { $0.position < $1.position }
        for _ in 0..<int(0...4) {
            switch int(1...4) {
            case 1, 2: changes.save(newWatch())
            case 3:
                let watch = pick(ordered)
                changes.remove(watch.map { WatchKey(customer: $0.customer, sku: $0.sku) } ?? WatchKey(customer: Self.customers[0], sku: Self.skus[0]))
            default:
                let line = ordered.filter { _ in chance(50) }
                let removed = line.filter { _ in chance(30) }
                let updated = line.filter { watch in !removed.contains(watch) }.map { watch in
                    Watch(
                        customer: watch.customer, sku: watch.sku, mode: watch.mode, minQuantity: watch.minQuantity,
                        position: watch.position, since: watch.since, isWaiting: chance(50), expiresAt: watch.expiresAt)
                }
                changes.lineChanged(updated: updated, removed: removed)
            }
        }
        for _ in 0..<int(0...2) { changes.inventory[pick(Self.skus)!] = chance(5) ? -1 : int(0...20) }
        if chance(30) { changes.counters = (chance(5) ? 0 : nextPosition, chance(5) ? 0 : nextAlert) }
        for _ in 0..<int(0...3) { changes.publications.append(publication()) }
        for _ in 0..<int(0...2) { changes.mirrored.insert(pick(Self.customers)!) }
        for _ in 0..<int(0...2) { changes.alertsRaised[pick(Self.skus)!] = int(0...5) }
        changes.appliedAt = date(hours: -60...30)
        if chance(20), let dead = pick(deadLetters) { changes.deadLettersRemoved.append(dead) }
        if chance(5), let who = pick(Self.customers) {
            changes.forgotten.append(
                StoreChanges.Forgotten(
                    customer: who, customerTopics: [appleTopics.alerts(who), appleTopics.subscriptions(who), appleTopics.errors(who)],
                    requestTopics: [appleTopics.subscribe(who), appleTopics.unsubscribe(who)]))
        }
        if chance(70) { changes.processedThrough = Int64(int(Int(processed)...Int(lastJournaled))) }
        step = "commit \(changes.watchChanges.count) watch changes, \(changes.publications.count) messages"
        guard let (a, b) = both("commit", { try $0.commit(changes) }) else { return }
        #expect(a == b, "seed \(seed), \(step)")
        // What the generator knows: the other backend's snapshot, compared with SQLite's below.
        if let snapshot = try? other.loadSnapshotReportingSkipped().snapshot {
            watches = Dictionary(snapshot.watches.map { (WatchKey(customer: $0.customer, sku: $0.sku), $0) }) { $1 }
        }
        deadLetters.removeAll { changes.deadLettersRemoved.contains($0) }
        processed = changes.processedThrough ?? processed
    }

    /// A message: a retained one (whose key repeats), an error, a single alert, or a batch of alerts.
    func publication() -> Publication {
        messages += 1
        let who = pick(Self.customers)!
        switch int(1...4) {
        case 1:
            return Publication(key: "mirror:\(who)", topic: appleTopics.subscriptions(who), payload: Array("m\(messages)".utf8), retain: true)
        case 2:
            return Publication(key: "error:\(messages)", topic: appleTopics.errors(who), payload: Array("e\(messages)".utf8), retain: false)
        case 3:
            var alert = Publication(
                key: Publication.alertKeyPrefix + "single-\(messages)", topic: appleTopics.alerts(who), payload: [1, 2], retain: false)
            alert.sku = pick(Self.skus)!.rawValue
            return alert
        default:
            let count = int(1...5)
            defer { nextAlert += UInt64(count) }
            let entries = (0..<count).map { offset in
                AlertBatch.Entry(sequence: nextAlert + UInt64(offset), customer: pick(Self.customers)!, position: UInt64(int(1...99)))
            }
            return Publication(
                batch: AlertBatch(store: apple, sku: pick(Self.skus)!, quantity: int(1...9), at: Self.base, epoch: "e", entries: entries))
        }
    }

    func acknowledge() {
        guard let pending = try? other.pendingPublications(after: 0, limit: 1_000) else { return }
        let singles = pending.filter { $0.alertCount == 0 && chance(50) }.map(\.seq) + (chance(10) ? [999_999] : [])
        let batches = pending.filter { $0.alertCount > 0 && chance(60) }.map { (seq: $0.seq, sent: int(0...$0.alertCount)) }
        step = "acknowledge \(singles) \(batches)"
        both("acknowledge") { try $0.acknowledge(messages: singles, batches: batches) }
    }

    func deadLetter() {
        // One not applied yet, as the pipeline sets aside.
        guard let request = pick(journaled.filter { $0.seq > processed }) else { return }
        messages += 1
        let error = Publication(key: "error:\(messages)", topic: appleTopics.errors(Self.customers[1]), payload: [1], retain: false)
        let reason = pick(["the store failed while applying this request", "it killed the store twice"])!
        let at = date(hours: -5...5)
        step = "dead letter \(request.seq)"
        guard let (a, b) = both("dead letter", { try $0.deadLetter(request, error: error, reason: reason, at: at) }) else { return }
        #expect(a == b, "seed \(seed), \(step)")
        deadLetters.append(request.seq)
        processed = request.seq
    }

    func trim() {
        let through = Int64(int(0...Int(processed)))
        step = "trim through \(through)"
        both("trim") { try $0.trimJournal(through: through) }
        journaled.removeAll { $0.seq <= through }
    }

    func attempt() {
        step = "attempt"
        switch int(1...3) {
        case 1:
            let first = Int64(int(-1...Int(lastJournaled)))
            let attempt = Attempt(first: first, last: first + Int64(int(-1...3)), suspectsThrough: Int64(int(0...Int(lastJournaled))))
            let kills = int(-1...300)
            both("begin attempt") { try $0.beginAttempt(attempt, kills: kills) }
        case 2: both("end attempt") { $0.endAttempt() }
        default: both("fail attempt") { $0.failAttempt() }
        }
    }

    func probeInstanceAndRestore() {
        step = "probe, instance, restore"
        both("probe") { try $0.probeJournal() }
        let instance = "i\(int(0...3))"
        agree("recorded instance") { try $0.recordedInstance() }
        agree("instance") { try $0.replaceInstance(with: instance) }
        agree("recorded instance after") { try $0.recordedInstance() }
        if chance(30) { both("reconciled") { try $0.restoreReconciled() } }
        both("checkpoint") { try $0.checkpoint() }
    }

    /// Stops both storages cleanly and opens them again, as a store started again on its data directory.
    func reopen() throws {
        step = "reopen"
        for storage in [sqlite, other] {
            storage.ownership.release()
            storage.releaseDirectory()
        }
        sqlite = try StoreDatabase(directory: directory.url, store: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"))
        other = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        done.insert("reopen")
    }

    // MARK: Reads

    /// Every read of the protocol, compared.
    package func compare() {
        agree("snapshot") { storage in
            let (snapshot, skipped) = try storage.loadSnapshotReportingSkipped()
            return "\(snapshot.watches) \(snapshot.inventory.sorted { $0.key < $1.key }) \(snapshot.nextPosition) \(snapshot.nextAlertSequence) skipped \(skipped.count)"
        }
        agree("pending") { try $0.pendingPublications(after: 0, limit: 10_000) }
        let after = Int64(int(0...max(1, messages)))
        let limit = int(-1...3)
        agree("pending after \(after), limit \(limit)") { try $0.pendingPublications(after: after, limit: limit) }
        agree("last outbox place") { $0.lastOutboxPlace }
        agree("outbox depth") { try $0.outboxDepth() }
        agree("queue lengths") { try $0.queueLengths() }
        agree("processed through") { try $0.processedThrough() }
        agree("journal") { try $0.journaledRequests(after: 0, limit: 10_000) }
        let from = Int64(int(0...Int(lastJournaled) + 1))
        agree("journal after \(from), limit \(limit)") { try $0.journaledRequests(after: from, limit: limit) }
        for hours in [-30.0, 0, 0.5, 20, 50] {
            let now = Self.base.addingTimeInterval(hours * 3_600)
            agree("report at \(hours) h") { try $0.report(at: now, sku: nil) }
            agree("report of s1 at \(hours) h") { try $0.report(at: now, sku: Self.skus[1]) }
            agree("expired at \(hours) h") { try $0.expiredWatches(at: now, limit: 1_000) }
            agree("expired at \(hours) h, limit 2") { try $0.expiredWatches(at: now, limit: 2) }
            agree("next expiry after \(hours) h") { try $0.nextExpiry(after: now) }
        }
        agree("dead letters") { try $0.deadLetterList() }
        for seq in deadLetters.prefix(3) + [lastJournaled + 5] { agree("dead letter \(seq)") { try $0.deadLetter(seq) } }
        agree("mirrored") { try $0.mirroredCustomers() }
        agree("inventory") { try $0.inventory() }
        agree("attempt") { try $0.lastAttempt() }
        agree("restored") { try $0.isRestored }
    }
}

/// A temporary directory of the pair's own, removed with it.
final class ScratchDirectory {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("restock-differential-\(UUID().uuidString)")

    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

let apple = try! StoreID("apple")
let appleTopics = try! RestockTopics(store: apple)
func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
