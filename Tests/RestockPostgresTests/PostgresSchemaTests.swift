import Foundation
import RestockCore
import RestockTestSupport
import Testing

@testable import RestockPipeline
@testable import RestockPostgres

extension PostgresServerTests {
    /// How the schema keeps up with what the store does to it: stock changes flip a flag of every watch of a SKU.
    @Suite("PostgreSQL schema")
    struct PostgresSchemaTests {
        /// The bytes of the watch table's heap and of its indexes.
        private static func sizes(_ server: PrivatePostgres) async throws -> (heap: Int, indexes: Int) {
            let row = try await server.psql("SELECT pg_relation_size('restock_watch') || ' ' || pg_indexes_size('restock_watch')")
            let parts = row.split(separator: " ").compactMap { Int($0) }
            return (parts.first ?? -1, parts.last ?? -1)
        }

        @Test("stock changes that flip the flag of 5,000 watches ten times leave the watch table and its indexes within a tenth of their size (found by B3: packed pages gave each update a copy of every row and index entry, 0.7 → 1.1 s per 100,000 rows)")
        func flagsUpdatedInPlace() async throws {
            try await PrivatePostgres.with { server in
                let storage = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                let count = 5_000
                func watches(waiting: Bool) -> [Watch] {
                    (0..<count).map { index in
                        Watch(
                            customer: customer("c\(index)"), sku: sku("s0"), mode: .every, minQuantity: 1, position: UInt64(index + 1),
                            since: Date(timeIntervalSinceReferenceDate: 0), isWaiting: waiting)
                    }
                }
                var seeded = StoreChanges()
                for watch in watches(waiting: true) { seeded.save(watch) }
                try storage.commit(seeded)
                let before = try await Self.sizes(server)
                // Alerted, then re-armed by the SKU's stock going to 0, five times: what B3's runs do.
                for flip in 0..<10 {
                    var changes = StoreChanges()
                    changes.lineChanged(updated: watches(waiting: flip % 2 == 1), removed: [])
                    try storage.commit(changes)
                }
                let after = try await Self.sizes(server)
                // A few rows a page may not fit beside their new version (the rows differ in length): within a tenth.
                #expect(after.heap <= before.heap + before.heap / 10, "the heap grew from \(before.heap) to \(after.heap) bytes")
                #expect(after.indexes <= before.indexes + before.indexes / 10, "the indexes grew from \(before.indexes) to \(after.indexes) bytes")
                #expect(try await server.psql("SELECT count(*) FROM restock_watch WHERE waiting") == "\(count)")
                storage.ownership.release()
            }
        }

        @Test("a start finds a function of the schema dropped by hand and makes it again, saying so, where it could only go online to stop at its first write (found by an outside trial); a user who may not make it is refused in one line before the store goes online")
        func droppedFunctionMadeAgain() async throws {
            try await PrivatePostgres.with { server in
                try server.makeSchema()
                // A user of the store's tables who may not create anything in the schema (PostgreSQL 15's default).
                let settings = try await server.tableUser("op")
                _ = try await server.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
                _ = try await server.psql("DROP FUNCTION restock_acknowledge")
                do {
                    _ = try PostgresStorage(settings: settings).open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                    Issue.record("a store without its functions opened")
                } catch let error as StorageError {
                    #expect(error.kind == .corrupt && !error.isRetriable, "\(error)")
                    #expect("\(error)".contains("lacks the function restock_acknowledge"), "\(error)")
                    #expect(!"\(error)".contains("\n"), "one line: \(error)")
                }
                #expect(try await server.psql("SELECT count(*) FROM pg_proc WHERE proname = 'restock_acknowledge'") == "0")
                // Its owner makes it again, and says so.
                let again = try server.backend.open(for: apple, claim: .exclusive(instance: "cccccccccccc"), now: Date())
                #expect(again.migrations.isEmpty)
                #expect(again.openingWarnings.count == 1 && again.openingWarnings.first?.contains("restock_acknowledge") == true, "\(again.openingWarnings)")
                let placed = try again.commit({
                    var changes = StoreChanges()
                    changes.publications = [Publication(key: "k", topic: "t", payload: [1], retain: false)]
                    return changes
                }())
                try again.acknowledge(messages: placed.map(\.seq), batches: [])
                #expect(try again.outboxDepth() == 0)
                again.ownership.release()
                again.releaseDirectory()
                let third = try server.backend.open(for: apple, claim: .exclusive(instance: "dddddddddddd"), now: Date())
                #expect(third.openingWarnings.isEmpty, "nothing is missing any more")
                third.ownership.release()
            }
        }

        @Test("a start as a user who may not execute a function of the schema (EXECUTE revoked by hand) is refused in one line that names the function and the grant, where it went online to stop at its first write (found by an outside trial); once granted, it opens")
        func revokedExecuteRefused() async throws {
            try await PrivatePostgres.with { server in
                try server.makeSchema()
                let settings = try await server.tableUser("op")
                _ = try await server.psql("REVOKE EXECUTE ON FUNCTION restock_commit FROM PUBLIC")
                do {
                    _ = try PostgresStorage(settings: settings).open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                    Issue.record("a store that may not execute its functions opened")
                } catch let error as StorageError {
                    #expect(error.kind == .corrupt && !error.isRetriable, "\(error)")
                    #expect("\(error)".contains("may not execute the store's function restock_commit"), "\(error)")
                    #expect("\(error)".contains("GRANT EXECUTE ON ROUTINE restock_commit TO op"), "\(error)")
                    #expect(!"\(error)".contains("\n"), "one line: \(error)")
                }
                _ = try await server.psql("GRANT EXECUTE ON ROUTINE restock_commit TO op")
                let granted = try PostgresStorage(settings: settings).open(for: apple, claim: .exclusive(instance: "cccccccccccc"), now: Date())
                #expect(granted.openingWarnings.isEmpty)
                #expect(try granted.commit(StoreChanges()).isEmpty)
                granted.ownership.release()
            }
        }

        @Test("a database at schema version 1 is migrated to the last: the watch table keeps half of each page free from then on, its commits go through the functions of version 3, and nothing else changes")
        func versionOneMigrated() async throws {
            try await PrivatePostgres.with { server in
                let first = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                var changes = StoreChanges()
                changes.save(Watch(customer: customer("c0"), sku: sku("s0"), mode: .every, minQuantity: 1, position: 1, since: Date()))
                try first.commit(changes)
                first.ownership.release()
                first.releaseDirectory()
                // What version 1 made: the watch table packed full, no functions, and its version alone recorded.
                _ = try await server.psql("ALTER TABLE restock_watch RESET (fillfactor)")
                _ = try await server.psql("DROP PROCEDURE restock_journal_durably, restock_commit_durably, restock_acknowledge_durably")
                _ = try await server.psql("DROP FUNCTION restock_acknowledge, restock_commit, restock_fence")
                _ = try await server.psql("DELETE FROM restock_schema_version WHERE version > 1")
                let again = try server.backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                #expect(again.migrations.first?.from == 1 && again.migrations.first?.to == PostgresSchema.knownVersion)
                #expect(try await server.psql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'restock_watch'") == "fillfactor=50")
                #expect(try await server.psql("SELECT customer || ' ' || waiting FROM restock_watch") == "c0 true")
                // Version 3's functions: a commit is one call of `restock_commit`, fenced by `restock_fence`.
                var more = StoreChanges()
                more.save(Watch(customer: customer("c1"), sku: sku("s0"), mode: .every, minQuantity: 1, position: 2, since: Date()))
                try again.commit(more)
                #expect(try await server.psql("SELECT count(*) FROM restock_watch") == "2")
                again.ownership.release()
            }
        }

        @Test("a database at schema version 3 is migrated to 4: what was journaled and committed is kept, and the journal's appends, the state's commits and the acknowledgements go through the procedures that commit before they answer")
        func versionThreeMigrated() async throws {
            try await PrivatePostgres.with { server in
                let first = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                _ = try first.journal(batch: [request("c0"), request("c1")])
                var changes = StoreChanges()
                changes.save(Watch(customer: customer("c0"), sku: sku("s0"), mode: .every, minQuantity: 1, position: 1, since: Date()))
                changes.processedThrough = 1
                try first.commit(changes)
                first.ownership.release()
                first.releaseDirectory()
                // What version 3 made: the functions, no procedures.
                _ = try await server.psql("DROP PROCEDURE restock_journal_durably, restock_commit_durably, restock_acknowledge_durably")
                _ = try await server.psql("DELETE FROM restock_schema_version WHERE version > 3")
                let again = try server.backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                #expect(again.migrations.first?.from == 3 && again.migrations.first?.to == 4 && PostgresSchema.knownVersion == 4)
                #expect(try await server.psql("SELECT count(*) FROM pg_proc WHERE proname LIKE 'restock_%_durably' AND prokind = 'p'") == "3")
                #expect(try again.journaledRequests(after: 0, limit: 10).map(\.seq) == [1, 2])
                #expect(try again.processedThrough() == 1)
                #expect(try again.journal(batch: [request("c2")]).map(\.seq) == [3])
                var more = StoreChanges()
                more.save(Watch(customer: customer("c1"), sku: sku("s0"), mode: .every, minQuantity: 1, position: 2, since: Date()))
                more.publications = [Publication(key: "k", topic: "t", payload: [1], retain: false)]
                more.processedThrough = 3
                let placed = try again.commit(more)
                try again.acknowledge(messages: placed.map(\.seq), batches: [])
                #expect(try await server.psql("SELECT string_agg(customer, ',' ORDER BY position) FROM restock_watch") == "c0,c1")
                #expect(try again.outboxDepth() == 0 && again.processedThrough() == 3)
                again.ownership.release()
            }
        }
    }
}
