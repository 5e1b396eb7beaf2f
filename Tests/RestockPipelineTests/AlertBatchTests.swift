import Foundation
import RestockCore
import RestockPipeline
import Testing

@Suite("Alert batches in the outbox")
struct AlertBatchTests {
    let store = try! Store(id: StoreID("apple"))

    /// The alerts of one restock to `count` customers.
    func restock(_ count: Int) throws -> [RestockAlert] {
        let sku = try SKU("iphone-15")
        try store.changeStock(of: sku, .set(0))
        for index in 0..<count { try store.subscribe(try CustomerID("c\(index)"), to: sku) }
        return try store.changeStock(of: sku, .set(3)).alerts
    }

    @Test("a batch rebuilds every alert of a restock, id and JSON byte for byte, after being written and read back")
    func roundTrip() throws {
        let alerts = try restock(50)
        let batch = try #require(AlertBatch(alerts))
        let read = try #require(AlertBatch(decoding: batch.encoded()))
        #expect(read == batch && read.count == 50)
        for index in alerts.indices {
            #expect(read.alert(index) == alerts[index])
            #expect(read.alert(index).jsonData() == alerts[index].jsonData())
        }
    }

    @Test("a committed batch's first alerts made ready after the commit are its alerts as sent, topic and JSON byte for byte; the message is the same value readied or not")
    func firstAlertsReadied() throws {
        let topics = try RestockTopics(store: store.id)
        for count in [1, CommittedPublication.readiedAlerts - 1, CommittedPublication.readiedAlerts, CommittedPublication.readiedAlerts + 1, 200] {
            let alerts = try restock(count)
            let batch = try #require(AlertBatch(alerts))
            let committed = CommittedPublication(seq: 7, publication: Publication(batch: batch))
            let readied = committed.readied(topics: topics)
            let ready = min(count, CommittedPublication.readiedAlerts)
            #expect(readied.firstAlerts.count == ready, "\(count) alerts")
            for index in 0..<ready {
                #expect(readied.firstAlerts[index].topic == topics.alerts(alerts[index].customer))
                #expect(readied.firstAlerts[index].payload == Array(alerts[index].jsonData()))
                #expect(readied.firstAlerts[index] == batch.message(index, topics: topics))
            }
            #expect(readied == committed && readied.hashValue == committed.hashValue)
            #expect(readied.readied(topics: topics).firstAlerts == readied.firstAlerts)
        }
        let single = CommittedPublication(seq: 8, publication: Publication(key: "k", topic: "t", payload: [1], retain: true))
        #expect(single.readied(topics: topics).firstAlerts.isEmpty)
    }

    @Test("a batch keeps its store's alert epoch in every id; a record written before epochs reads as one without")
    func epochKept() throws {
        let store = try Store(id: StoreID("apple"), alertEpoch: "3f9c1e0a7b2d")
        let sku = try SKU("ipad")
        try store.subscribe(try CustomerID("alice"), to: sku)
        try store.subscribe(try CustomerID("bob"), to: sku)
        let alerts = try store.changeStock(of: sku, .set(1)).alerts
        #expect(alerts.map(\.id) == ["apple-3f9c1e0a7b2d-1", "apple-3f9c1e0a7b2d-2"])
        let batch = try #require(AlertBatch(alerts))
        let read = try #require(AlertBatch(decoding: batch.encoded()))
        #expect((0..<2).map { read.alert($0).id } == alerts.map(\.id))
        // The header of an older record: four fields, no epoch.
        let old = Array("apple ipad 1 \(Date().timeIntervalSinceReferenceDate.bitPattern)\n7 alice 1\n".utf8)
        #expect(try #require(AlertBatch(decoding: old)).alert(0).id == "apple-7")
    }

    @Test("alerts that are not one store-raised change do not make a batch")
    func refusesMixedAlerts() throws {
        var alerts = try restock(3)
        #expect(AlertBatch([]) == nil)
        alerts[1].message = "a sentence of its own"
        #expect(AlertBatch(alerts) == nil)
        alerts = try restock(2)
        #expect(alerts.count == 2)
        alerts[0].quantity = 99
        #expect(AlertBatch(alerts) == nil)
    }

    @Test("a record that is not a batch is refused when read")
    func refusesGarbage() {
        #expect(AlertBatch(decoding: Array("not a batch".utf8)) == nil)
        #expect(AlertBatch(decoding: Array("apple iphone-15 3 0\n1 a/b 1\n".utf8)) == nil)
    }

    @Test("the outbox counts a batch's unsent alerts, and forgets it once all are acknowledged")
    func outboxProgress() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("batch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try StoreDatabase(directory: directory)
        var changes = StoreChanges()
        changes.publications = [Publication(batch: try #require(AlertBatch(try restock(10))))]
        try database.commit(changes)
        #expect(try database.queueLengths().outbox == 10)
        let row = try #require(try database.pendingPublications(after: 0, limit: 10).first)
        #expect(row.alertCount == 10 && row.sent == 0)
        try database.acknowledge(messages: [], batches: [(row.seq, 4)])
        #expect(try database.queueLengths().outbox == 6)
        #expect(try database.pendingPublications(after: 0, limit: 10).first?.sent == 4)
        try database.acknowledge(messages: [], batches: [(row.seq, 10)])
        #expect(try database.queueLengths().outbox == 0)
    }
}
