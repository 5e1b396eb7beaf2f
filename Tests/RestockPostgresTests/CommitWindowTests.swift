import Foundation
import RestockCore
import RestockTestSupport
import Testing

@testable import RestockPipeline
@testable import RestockPostgres

extension PostgresServerTests {
    /// A write the store counts as done has committed: a connection that ends between a statement's answer and the end of
    /// its transaction (``PostgresWireCut``, as a server's fast shutdown does) leaves nothing the store took as written
    /// missing from the database (found by an outside trial: two journaled requests acknowledged and lost).
    @Suite("PostgreSQL: a write counted once committed")
    struct CommitWindowTests {
        /// The storage of apple on `server`, through `cut`.
        private static func storage(on server: PrivatePostgres, through cut: PostgresWireCut) throws -> PostgresStoreStorage {
            var settings = server.settings
            settings.servers = [DatabaseURL.Server(host: "127.0.0.1", port: cut.port)]
            let opened = try PostgresStorage(settings: settings).open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
            return try #require(opened as? PostgresStoreStorage)
        }

        @Test("a journal's append cut after its answer: it answered after its commit, every place it returned holds its request in the database, and the journal goes on after it")
        func journalAppend() async throws {
            try await Self.onServer { server, cut, storage in
                _ = try storage.journal(batch: [request("c0")])
                cut.arm(marker: "JournalAppend")
                let answered = Result { try storage.journal(batch: [request("c1"), request("c2")]) }
                #expect(cut.cuts == 1)
                let held = try await server.psql("SELECT string_agg(seq::text, ',' ORDER BY seq) FROM restock_journal WHERE store = 'apple'")
                // Answered after its commit, so the answer came whole before the cut.
                let journaled = try answered.get()
                #expect(held == (["1"] + journaled.map { "\($0.seq)" }).joined(separator: ","), "returned \(journaled.map(\.seq))")
                // The next append, on a new connection, is written after whatever the database holds.
                let next = try storage.journal(batch: [request("c3")])
                #expect(try storage.journaledRequests(after: 0, limit: 10).last?.seq == next.first?.seq)
            }
        }

        @Test("a journal's append committed whose answer is lost: refused, its rows are never read as journaled, and the broker's delivery again is journaled once, the rows of the first taken out (found by an outside trial: a stock change applied twice)")
        func journalAppendUnanswered() async throws {
            try await Self.onServer { server, cut, storage in
                _ = try storage.journal(batch: [request("c0")])
                cut.arm(marker: "JournalAppend", cut: .afterItsEnd)
                #expect(throws: StorageError.self) { try storage.journal(batch: [request("c1"), request("c2")]) }
                #expect(cut.cuts == 1)
                let rows = "SELECT string_agg(seq || '=' || convert_from(payload, 'UTF8'), ',' ORDER BY seq) FROM restock_journal"
                #expect(try await server.psql(rows) == "1={},2={},3={}", "the append committed")
                #expect(try storage.journaledRequests(after: 0, limit: 10).map(\.seq) == [1], "not the store's: refused")
                // The broker delivers the refused requests again.
                let again = try storage.journal(batch: [request("c1"), request("c2")])
                #expect(again.map(\.seq) == [4, 5])
                #expect(try storage.journaledRequests(after: 0, limit: 10).map(\.topic) == [request("c0"), request("c1"), request("c2")].map(\.topic))
                #expect(try await server.psql(rows) == "1={},4={},5={}")
            }
        }

        @Test("after a journal's append committed unanswered, the probe before the journal resumes takes its rows out")
        func probeSettlesAnUnansweredAppend() async throws {
            try await Self.onServer { server, cut, storage in
                _ = try storage.journal(batch: [request("c0")])
                cut.arm(marker: "JournalAppend", cut: .afterItsEnd)
                #expect(throws: StorageError.self) { try storage.journal(batch: [request("c1")]) }
                #expect(try await server.psql("SELECT count(*) FROM restock_journal") == "2")
                try storage.probeJournal()
                #expect(try await server.psql("SELECT string_agg(seq::text, ',') FROM restock_journal") == "1")
            }
        }

        @Test("a state's commit cut after its answer: it answered after its commit, and what it wrote is in the database")
        func stateCommit() async throws {
            try await Self.cutting("StateCommit", before: { try $0.commit(Self.saving("c0", position: 1)) }) { storage, _ in
                try storage.commit(Self.saving("c1", position: 2))
            } then: { server async throws in
                #expect(try await server.psql("SELECT string_agg(customer, ',' ORDER BY position) FROM restock_watch") == "c0,c1")
            }
        }

        @Test("an acknowledgement cut after its answer: it answered after its commit, and its message is gone from the outbox")
        func acknowledgement() async throws {
            try await Self.cutting("restock_acknowledge", before: { storage in
                var changes = Self.saving("c0", position: 1)
                changes.publications = [Publication(key: "alert-1", topic: "restock/apple/customers/c0/alerts", payload: Array("{}".utf8), retain: false)]
                return try storage.commit(changes)
            }) { storage, messages in
                try storage.acknowledge(messages: messages.map(\.seq), batches: [])
            } then: { server async throws in
                #expect(try await server.psql("SELECT count(*) FROM restock_outbox") == "0")
            }
        }

        /// On a server of its own, through a relay: makes the storage, runs `before` on it, arms the relay for the
        /// statement of `marker`, runs `write` (which must answer: each commits before it answers), and then `check`.
        private static func cutting<Made>(
            _ marker: String, before: (PostgresStoreStorage) throws -> Made, write: (PostgresStoreStorage, Made) throws -> some Any,
            then check: (PrivatePostgres) async throws -> Void
        ) async throws {
            try await onServer { server, cut, storage in
                let made = try before(storage)
                cut.arm(marker: marker)
                _ = try write(storage, made)
                #expect(cut.cuts == 1)
                try await check(server)
            }
        }

        /// Runs `body` with a server of its own, a relay to it, and the storage of apple through the relay.
        private static func onServer(_ body: (PrivatePostgres, PostgresWireCut, PostgresStoreStorage) async throws -> Void) async throws {
            try await PrivatePostgres.with { server in
                let cut = try PostgresWireCut(to: server.port)
                let storage = try Self.storage(on: server, through: cut)
                try await body(server, cut, storage)
                storage.ownership.release()
            }
        }

        /// A commit that saves `who`'s watch of s0 at `position`.
        private static func saving(_ who: String, position: UInt64) -> StoreChanges {
            var changes = StoreChanges()
            changes.save(Watch(customer: customer(who), sku: sku("s0"), mode: .every, minQuantity: 1, position: position, since: Date()))
            changes.processedThrough = Int64(position)
            return changes
        }
    }
}
