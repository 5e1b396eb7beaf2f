import Foundation
import RestockCore
import RestockPostgres
import RestockTestSupport
import StorageDifferential
import Testing

@testable import RestockPipeline

extension PostgresServerTests {
    /// The PostgreSQL backend against the SQLite one, its specification: seeded random sequences of operations applied to
    /// both, every read of ``StoreStorage`` compared after each step (the generator of Tests/StorageDifferential, as for
    /// the memory backend).
    @Suite("PostgreSQL storage against SQLite")
    struct PostgresDifferentialTests {
        typealias Pair = StorageDifferential

        @Test("random sequences of operations leave SQLite and PostgreSQL answering every read alike", arguments: [1, 2, 3, 0xC0FFEE] as [UInt64])
        func differential(seed: UInt64) async throws {
            try await PrivatePostgres.with { server in
                let pair = try Pair(seed: seed, other: server.backend)
                for index in 0..<120 {
                    pair.step = ""
                    try pair.randomStep()
                    pair.step = "step \(index): \(pair.step)"
                    pair.compare()
                }
                // The run made every kind of operation, and the state has something in each place the reads compare.
                let kinds: Set = ["journal", "commit", "acknowledge", "dead letter", "trim", "begin attempt", "fail attempt", "reopen"]
                #expect(pair.conflicts > 0, "no commit was refused")
                #expect(kinds.subtracting(pair.done).isEmpty)
                let report = try pair.other.report(at: Pair.base, sku: nil)
                #expect(report.watches > 0 && report.alertsRaised.life > 0 && report.alertsAcknowledged.life > 0)
            }
        }

        @Test("a batch of alerts partly acknowledged counts what is left, and the figures count what was newly acknowledged")
        func partlyAcknowledgedBatch() async throws {
            try await PrivatePostgres.with { server in
                let pair = try Pair(seed: 7, other: server.backend)
                let entries = (1...4).map { AlertBatch.Entry(sequence: UInt64($0), customer: Pair.customers[$0], position: UInt64($0)) }
                var changes = StoreChanges()
                changes.publications = [
                    Publication(batch: AlertBatch(store: apple, sku: Pair.skus[0], quantity: 3, at: Pair.base, epoch: nil, entries: entries))
                ]
                changes.alertsRaised = [Pair.skus[0]: 4]
                changes.appliedAt = Date()
                let placed = pair.both("commit") { try $0.commit(changes) }
                let seq = try #require(placed?.other.first?.seq)
                pair.both("acknowledge 1") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 1)]) }
                pair.both("acknowledge 3") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 3)]) }
                pair.compare()
                #expect(try pair.other.outboxDepth() == 1)
                #expect(try pair.other.pendingPublications(after: 0, limit: 9).map(\.sent) == [3])
                #expect(try pair.other.report(at: Date(), sku: nil).alertsAcknowledged.life == 3)
                pair.both("acknowledge all") { try $0.acknowledge(messages: [], batches: [(seq: seq, sent: 4)]) }
                #expect(try pair.other.outboxDepth() == 0)
                pair.compare()
            }
        }
    }
}
