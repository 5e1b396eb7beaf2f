import Foundation
import GRDB
import RestockCore
import Testing

@testable import RestockPipeline

/// The report's figures (``AlertFigures``), in memory: hours, the fold into hour 0, acknowledgements from the outbox.
@Suite("Alert figures")
struct AlertFiguresTests {
    func state() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try StateSchema.prepare(queue)
        return queue
    }

    @Test("raised alerts count in their hour; hours older than a day fold into the store's life; last 24 h is the last 24 hours")
    func windows() throws {
        let queue = try state()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let tv = try SKU("tv"), radio = try SKU("radio")
        try queue.write { db in
            try AlertFigures.record(raised: [tv: 3], at: now.addingTimeInterval(-30 * 3_600), in: db)
            try AlertFigures.record(raised: [tv: 2, radio: 1], at: now.addingTimeInterval(-23 * 3_600), in: db)
            try AlertFigures.record(raised: [tv: 5], at: now, in: db)
        }
        let hours = try queue.read { db in try Int64.fetchAll(db, sql: "SELECT hour FROM alertFigure WHERE sku = 'tv' ORDER BY hour") }
        #expect(hours.first == 0, "the hour 30 h back is folded into hour 0: \(hours)")
        #expect(hours.count == 3)
        let report = try queue.read { db in try AlertFigures.report(at: now, sku: nil, in: db) }
        let figures = Dictionary(uniqueKeysWithValues: report.skus.map { ($0.sku, $0) })
        #expect(figures["tv"]?.alertsRaised == StoreReport.Window(life: 10, last24h: 7))
        #expect(figures["radio"]?.alertsRaised == StoreReport.Window(life: 1, last24h: 1))
        #expect(report.alertsRaised == StoreReport.Window(life: 11, last24h: 8))
        let later = try queue.read { db in try AlertFigures.report(at: now.addingTimeInterval(24 * 3_600), sku: tv, in: db) }
        #expect(later.skus.map(\.alertsRaised) == [StoreReport.Window(life: 10, last24h: 0)])
    }

    @Test("acknowledgements count per SKU from the outbox rows they forget: single alerts, and the newly sent part of a batch")
    func acknowledged() throws {
        let queue = try state()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox (seq, key, topic, payload, retain, batch, sent, sku) VALUES
                        (1, 'alert:a', 't', x'00', 0, 0, 0, 'tv'), (2, 'alert:b', 't', x'00', 0, 0, 0, 'tv'),
                        (3, 'mirror', 't', x'00', 1, 0, 0, NULL), (4, 'alert:c+10', '', x'00', 0, 10, 4, 'radio')
                    """)
            try AlertFigures.recordAcknowledged(messages: [1, 2, 3], batches: [(seq: 4, sent: 7)], at: now, in: db)
        }
        let report = try queue.read { db in try AlertFigures.report(at: now, sku: nil, in: db) }
        let figures = Dictionary(uniqueKeysWithValues: report.skus.map { ($0.sku, $0.alertsAcknowledged.life) })
        #expect(figures == ["tv": 2, "radio": 3])
    }
}
