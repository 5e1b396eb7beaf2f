import Foundation
import GRDB
import RestockCore
import Testing

@testable import RestockPipeline

/// The store's state written by ``StateWriter`` and read back by ``StateReader``, in memory.
@Suite("State commit and snapshot")
struct StateStorageTests {
    /// A state in memory, its schema ready.
    static func state() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try StateSchema.prepare(queue)
        return queue
    }

    static let since = Date(timeIntervalSinceReferenceDate: 12.25)

    static func watch(_ who: String, _ item: String, position: UInt64, mode: WatchMode = .once, waiting: Bool = true) -> Watch {
        Watch(customer: customer(who), sku: sku(item), mode: mode, minQuantity: 2, position: position, since: since, isWaiting: waiting)
    }

    @Test("what a commit writes, the snapshot reads back: watches in position order, stock, counters, mirrors, how far applied")
    func roundTrip() throws {
        let queue = try Self.state()
        var changes = StoreChanges()
        let watches = [Self.watch("bob", "mac", position: 7, mode: .every, waiting: false), Self.watch("alice", "ipad", position: 3)]
        for watch in watches { changes.save(watch) }
        changes.inventory = [sku("ipad"): 0, sku("mac"): 12]
        changes.counters = (nextPosition: 8, nextAlertSequence: 5)
        changes.mirrored = [customer("carol"), customer("alice")]
        changes.processedThrough = 41
        try StateWriter(queue).commit(changes, messages: [])

        let reader = StateReader(queue)
        let (snapshot, skipped) = try reader.snapshot()
        #expect(skipped.isEmpty)
        #expect(snapshot == StoreSnapshot(watches: watches.reversed(), inventory: changes.inventory, nextPosition: 8, nextAlertSequence: 5))
        #expect(try reader.inventory().map { "\($0.0)=\($0.1)" } == ["ipad=0", "mac=12"])
        #expect(try reader.mirroredCustomers() == [customer("alice"), customer("carol")])
        #expect(try reader.processedThrough() == 41)
        let queues = try reader.queueLengths(log: nil)
        #expect([queues.inbox, queues.outbox, queues.watches] as [Int] == [0, 0, 2])
    }

    @Test("a commit of many rows of each kind: saves, then deletes by key and by position, then flags by position")
    func manyRows() throws {
        let queue = try Self.state()
        let watches = (1...1_000).map { Self.watch("c\($0)", "sku\($0 % 7)", position: UInt64($0)) }
        var saves = StoreChanges()
        for watch in watches { saves.save(watch) }
        try StateWriter(queue).commit(saves, messages: [])
        var removals = StoreChanges()
        for watch in watches where watch.position % 3 == 0 { removals.remove(WatchKey(customer: watch.customer, sku: watch.sku)) }
        removals.lineChanged(updated: watches.filter { $0.position % 5 == 0 && $0.position % 3 != 0 }.map { watch in
            Self.watch(watch.customer.rawValue, watch.sku.rawValue, position: watch.position, waiting: false)
        }, removed: watches.filter { $0.position % 7 == 0 })
        try StateWriter(queue).commit(removals, messages: [])
        let left: [UInt64] = try StateReader(queue).snapshot().snapshot.watches.map(\.position)
        let kept: [UInt64] = watches.map(\.position).filter { $0 % 3 != 0 && $0 % 7 != 0 }
        #expect(left == kept)
        let alerted: [UInt64] = try StateReader(queue).snapshot().snapshot.watches.filter { !$0.isWaiting }.map(\.position)
        #expect(alerted == kept.filter { $0 % 5 == 0 })
    }

    @Test("rows that hold no valid record are left out and described; the next position still passes them")
    func damagedRowsSkipped() throws {
        let queue = try Self.state()
        var changes = StoreChanges()
        changes.save(Self.watch("alice", "ipad", position: 1))
        changes.counters = (nextPosition: 2, nextAlertSequence: 1)
        try StateWriter(queue).commit(changes, messages: [])
        try queue.write { db in
            try db.execute(sql: "INSERT INTO watch VALUES ('bob', 'ipad', 'once', 1, 90, 'yesterday', 1, NULL)")
            try db.execute(sql: "INSERT INTO watch VALUES ('not a customer!', 'ipad', 'once', 1, 91, 0, 1, NULL)")
            try db.execute(sql: "INSERT INTO watch VALUES ('carol', 'ipad', 'sometimes', 1, 92, 0, 1, 'soon')")
            try db.execute(sql: "INSERT INTO inventory VALUES ('no spaces allowed', 3), ('mac', 'many')")
            try db.execute(sql: "INSERT OR REPLACE INTO counter VALUES ('nextAlertSequence', -4)")
        }
        let (snapshot, skipped) = try StateReader(queue).snapshot()
        #expect(snapshot.watches == [Self.watch("alice", "ipad", position: 1)])
        #expect(snapshot.inventory.isEmpty)
        #expect(snapshot.nextPosition == 93, "past every position a row holds, skipped ones included")
        #expect(snapshot.nextAlertSequence == 1)
        #expect(skipped.sorted() == [
            "counter \"nextAlertSequence\", -4",
            "inventory \"mac\", \"many\"",
            "inventory \"no spaces allowed\", 3",
            "watch \"bob\", \"ipad\", \"once\", 1, 90, \"yesterday\", 1, NULL",
            "watch \"carol\", \"ipad\", \"sometimes\", 1, 92, 0.0, 1, \"soon\"",
            "watch \"not a customer!\", \"ipad\", \"once\", 1, 91, 0.0, 1, NULL",
        ])
    }

    @Test("rows stored out of position order (a table rebuilt by hand) are read in position order: the restore reads the table in its own order, not through the position index")
    func rowsOutOfOrderSorted() throws {
        let queue = try Self.state()
        try queue.write { db in
            for position in [5, 2, 9, 1, 7] {
                try db.execute(sql: "INSERT INTO watch VALUES ('c\(position)', 'ipad', 'once', 1, \(position), 0, 1, NULL)")
            }
        }
        let (snapshot, skipped) = try StateReader(queue).snapshot()
        #expect(skipped.isEmpty)
        #expect(snapshot.watches.map(\.position) == [1, 2, 5, 7, 9])
        #expect(snapshot.watches.map(\.customer.rawValue) == ["c1", "c2", "c5", "c7", "c9"])
    }

    @Test("the inventory with an invalid SKU is refused as a damaged state, named, not trapped on")
    func invalidInventoryRefused() throws {
        let queue = try Self.state()
        try queue.write { db in try db.execute(sql: "INSERT INTO inventory VALUES ('no spaces allowed', 3)") }
        do {
            _ = try StateReader(queue, path: "/data/store.sqlite").inventory()
            Issue.record("read an invalid SKU")
        } catch {
            #expect(error.path == "/data/store.sqlite")
            guard case .dataDirectoryDamaged(let file, let problem, _) = error.cause as? RestockMQTTError else {
                Issue.record("refused with \(error.cause)")
                return
            }
            #expect(file == "/data/store.sqlite")
            #expect(problem == "the inventory holds an invalid SKU \"no spaces allowed\"")
        }
    }

    @Test("a commit that fails writes nothing of itself and fails as a StorageError naming the file")
    func failedCommitWritesNothing() throws {
        let queue = try Self.state()
        try queue.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON mirror WHEN NEW.customer = 'boom' BEGIN SELECT RAISE(ABORT, 'no'); END")
        }
        var changes = StoreChanges()
        changes.save(Self.watch("alice", "ipad", position: 1))
        changes.mirrored = [customer("boom")]
        changes.processedThrough = 1
        #expect {
            try StateWriter(queue, path: "/data/store.sqlite").commit(changes, messages: [])
        } throws: { error in
            (error as? StorageError)?.path == "/data/store.sqlite" && (error as? StorageError)?.action == .write
        }
        #expect(try StateReader(queue).snapshot().snapshot.watches.isEmpty)
        #expect(try StateReader(queue).processedThrough() == 0)
    }
}
