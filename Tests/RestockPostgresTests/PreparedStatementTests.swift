import Foundation
import PostgresNIO
import RestockCore
import RestockTestSupport
import Testing

@testable import RestockPipeline
@testable import RestockPostgres

/// The state's commit is sent as a statement prepared under one text (``StateCommit``): whatever a batch changed, the
/// query made of it must have that text, every value a bind, or its binds would not match the statement.
@Suite("Prepared statements")
struct PreparedStatementTests {
    @Test("the state's commit has one text whatever the batch holds — watches saved and removed, stock, counters, forgotten customers, messages, or nothing — and its binds are the values: a query of another text is refused, not sent")
    func stateCommitTextFixed() throws {
        var full = StoreChanges()
        full.save(Watch(customer: customer("ann"), sku: sku("ipad"), mode: .every, minQuantity: 2, position: 7, since: Date(), expiresAt: Date()))
        full.save(Watch(customer: customer("bob"), sku: sku("ipad"), mode: .once, minQuantity: 1, position: 8, since: Date()))
        full.remove(WatchKey(customer: customer("cy"), sku: sku("mac")))
        full.inventory = [sku("ipad"): 3, sku("mac"): 0]
        full.counters = (nextPosition: 9, nextAlertSequence: 4)
        full.alertsRaised = [sku("ipad"): 2]
        full.mirrored = [customer("ann")]
        full.deadLettersRemoved = [5, 6]
        full.forgotten = [StoreChanges.Forgotten(customer: customer("dee"), customerTopics: ["a", "b"], requestTopics: ["c"])]
        full.processedThrough = 12
        let messages = [
            CommittedPublication(seq: 1, publication: Publication(key: "k", topic: "t", payload: [1, 2], retain: true)),
            CommittedPublication(seq: 2, publication: Publication(key: "m", topic: "u", payload: [], retain: false)),
        ]
        let commits = [
            PostgresStateWriter.commit(full, messages: messages, store: "apple", epoch: 3),
            PostgresStateWriter.commit(full, messages: [], store: "pear", epoch: nil),
            PostgresStateWriter.commit(StoreChanges(), messages: messages, store: "apple", epoch: 1),
        ]
        for query in commits {
            #expect(query.sql == StateCommit.sql)
            #expect(try StateCommit(query: query).makeBindings().count == query.binds.count)
        }
        #expect(commits[0].binds.count > 30, "the values are binds, not text: \(commits[0].binds.count)")
        #expect(throws: PreparedTextMismatch.self) { _ = try StateCommit(query: "SELECT restock_commit(\("apple"))").makeBindings() }
    }
}
