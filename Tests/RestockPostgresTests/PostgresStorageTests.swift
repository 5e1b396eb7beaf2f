import Foundation
import Deadlines
import LocalBroker
import Logging
import RestockCore
import RestockTestSupport
import Testing

@testable import RestockPipeline
@testable import RestockPostgres

extension PostgresServerTests {
    /// What the PostgreSQL backend adds to the seam's contract: the schema's version guard, stores that share a database,
    /// and an outage of the server under an open storage.
    @Suite("PostgreSQL storage")
    struct PostgresStorageTests {
        @Test("a schema of a newer version is refused, with nothing written; a new database records the version it made")
        func newerSchemaRefused() async throws {
            try await PrivatePostgres.with { server in
                let first = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                #expect(first.migrations.map(\.description).first?.contains("schema version \(PostgresSchema.knownVersion)") == true)
                #expect(first.migrations.first?.from == 0 && first.migrations.first?.to == PostgresSchema.knownVersion)
                first.ownership.release()
                first.releaseDirectory()
                let again = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                #expect(again.migrations.isEmpty, "a schema at this version runs nothing")
                again.ownership.release()
                _ = try await server.psql("INSERT INTO restock_schema_version (version) VALUES (\(PostgresSchema.knownVersion + 1))")
                let refusal = RestockMQTTError.dataDirectoryOfNewerVersion(
                    file: server.backend.location, schemaVersion: PostgresSchema.knownVersion + 1, knownVersion: PostgresSchema.knownVersion)
                #expect(throws: refusal) { _ = try server.backend.open(for: pear, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date()) }
                #expect(throws: refusal) { _ = try server.backend.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date()) }
                #expect(try await server.psql("SELECT count(*) FROM restock_store WHERE store = 'pear'") == "0")
                #expect(try await server.psql("SELECT epoch || ' ' || released FROM restock_lease WHERE store = 'apple'") == "2 true")
            }
        }

        @Test("the attempts and the acknowledgements are not waited for on the server's disk, but the journal's appends and the state's commits are (a commit not waited for could be lost to a failover while the store holds it: found by the failover test): the server syncs its write-ahead log for each of those only")
        func flushedOnlyWhereDurable() async throws {
            try await PrivatePostgres.with { server in
                let storage = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                // The server's count of write-ahead log syncs, which a server process reports when idle, lazily (up to
                // some ten seconds later), all of its own at once.
                @Sendable func syncs() async throws -> Int { Int(try await server.psql("SELECT wal_sync FROM pg_stat_wal")) ?? 0 }
                let rounds = 200
                var messages = StoreChanges()
                messages.publications = (1...rounds).map { Publication(key: "k\($0)", topic: "t", payload: [1], retain: false) }
                let placed = try storage.commit(messages)
                let base = try await syncs()
                for round in 1...rounds {
                    try storage.beginAttempt(Attempt(first: Int64(round), last: Int64(round), suspectsThrough: 0), kills: 0)
                    try storage.acknowledge(messages: [placed[round - 1].seq], batches: [])
                }
                #expect(try storage.outboxDepth() == 0)
                for round in 1...50 {
                    _ = try storage.journal(batch: [(topic: "t", payload: [UInt8(round)], size: 1, retained: false)])
                    var changes = StoreChanges()
                    changes.save(Watch(customer: customer("c\(round)"), sku: sku("s0"), mode: .every, minQuantity: 1, position: UInt64(round), since: Date()))
                    changes.processedThrough = Int64(round)
                    try storage.commit(changes)
                }
                // The 100 flushed commits, reported: with them, the 200 before, by the same server process.
                try await waitUntil("the syncs of 100 flushed commits counted", within: 90, pollEvery: .milliseconds(500)) {
                    try await syncs() >= base + 100
                }
                // Besides, the server's WAL writer syncs a few times a second by itself.
                let counted = try await syncs() - base
                #expect(counted < 100 + rounds / 2, "\(counted) syncs for 100 flushed commits, \(rounds) attempts and \(rounds) acknowledgements")
                storage.ownership.release()
            }
        }

        @Test("the journal's append, the attempt's record and the state's commit are prepared on the store's connection, once each: sent unnamed, the server parsed and planned them at every call, on an alert's way (docs/benchmarks.md, \"B4 on PostgreSQL, its statements prepared\"); what they write is as before")
        func journalAndAttemptPrepared() async throws {
            try await PrivatePostgres.with { server in
                let opened = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                let storage = try #require(opened as? PostgresStoreStorage)
                var places: [Int64] = []
                for round in 1...3 {
                    let requests = (0..<round).map { (topic: "t\(round)", payload: [UInt8($0)], size: 1, retained: $0 == 0) }
                    places += try storage.journal(batch: requests).map(\.seq)
                    try storage.beginAttempt(Attempt(first: places.last!, last: places.last!, suspectsThrough: 1), kills: round)
                }
                #expect(places == Array(1...6))
                #expect(try storage.journaledRequests(after: 0, limit: 10).map(\.payload) == [[0], [0], [1], [0], [1], [2]])
                #expect(try storage.journaledRequests(after: 0, limit: 10).map(\.retained) == [true, true, false, true, false, false])
                let attempt = try #require(try storage.lastAttempt())
                #expect(attempt.attempt == Attempt(first: 6, last: 6, suspectsThrough: 1) && attempt.kills == 3 && !attempt.faulted)
                for round in 1...3 {
                    var changes = StoreChanges()
                    changes.save(Watch(customer: customer("c\(round)"), sku: sku("s0"), mode: .every, minQuantity: 1, position: UInt64(round), since: Date()))
                    changes.inventory = [sku("s0"): round]
                    changes.processedThrough = Int64(round)
                    try storage.commit(changes)
                }
                let snapshot = try storage.loadSnapshotReportingSkipped().snapshot
                #expect(snapshot.watches.map(\.customer) == [customer("c1"), customer("c2"), customer("c3")])
                #expect(try storage.processedThrough() == 3)
                // The session's own prepared statements: a statement sent unnamed leaves none.
                let prepared = try storage.read { statements in
                    try statements.query("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql").map { try $0.decode(String.self) }
                }
                #expect(prepared.count == 3, "\(prepared)")
                #expect(prepared.contains { $0.contains("CALL restock_journal_durably(") })
                #expect(prepared.contains { $0.contains("INSERT INTO restock_attempt") })
                #expect(prepared.contains { $0.contains("CALL restock_commit_durably(") })
                storage.ownership.release()
            }
        }

        @Test("a commit refused for want of a permission (EXECUTE revoked) is the storage's trouble, not the request's: after two such stops and the grant, the request is applied, not set aside as one that failed the store twice (found by an outside trial)")
        func permissionRefusalNotCountedAgainstTheRequest() async throws {
            try await PrivatePostgres.with { server in
                try server.makeSchema()
                let settings = try await server.tableUser("op")
                let ipad = sku("ipad")
                for (round, instance) in ["bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd"].enumerated() {
                    _ = try await server.psql("GRANT EXECUTE ON FUNCTION restock_commit TO PUBLIC")
                    let storage = try PostgresStorage(settings: settings).open(for: apple, claim: .exclusive(instance: instance), now: Date())
                    if round == 0 {
                        let payload = Array(#"{"sku":"ipad"}"#.utf8)
                        _ = try storage.journal(batch: [(topic: appleTopics.subscribe(customer("alice")), payload: payload, size: payload.count, retained: false)])
                    }
                    let refused = round < 2
                    if refused { _ = try await server.psql("REVOKE EXECUTE ON FUNCTION restock_commit FROM PUBLIC") }
                    let (_, wakeup) = AsyncStream.makeStream(of: Void.self)
                    let store = try Store(id: apple, restoring: try storage.loadSnapshotReportingSkipped().snapshot)
                    let processor = try RequestProcessor(
                        store: store, topics: appleTopics, storage: storage, requests: HandOff(capacity: 10, wakeup: wakeup),
                        committed: HandOff(capacity: 10, wakeup: wakeup), logger: Logger(label: "test"), clock: { Date() })
                    if refused {
                        #expect(throws: StorageError.self) { try processor.drainInbox() }
                        #expect(try storage.lastAttempt()?.faulted == false, "round \(round): not marked as the request's failure")
                    } else {
                        #expect(try processor.drainInbox() == 1)
                        #expect(try storage.deadLetterList().isEmpty)
                        #expect(store.watchers(of: ipad).map(\.customer) == [customer("alice")])
                    }
                    storage.ownership.release()
                    storage.releaseDirectory()
                }
            }
        }

        @Test("a database holding only a newer version's version table is refused before any table is made")
        func newerEmptySchemaRefused() async throws {
            try await PrivatePostgres.with { server in
                _ = try await server.psql("CREATE TABLE restock_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
                _ = try await server.psql("INSERT INTO restock_schema_version (version) VALUES (7)")
                #expect(throws: RestockMQTTError.self) { _ = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date()) }
                #expect(try await server.psql("SELECT to_regclass('restock_store') IS NULL AND to_regclass('restock_lease') IS NULL") == "t")
            }
        }

        @Test("two stores in one database see nothing of each other's: journal, state, outbox, dead letters, figures, leases")
        func storesApart() async throws {
            try await PrivatePostgres.with { server in
                let a = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                let p = try server.backend.open(for: pear, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                let journaled = try a.journal(batch: [request("c0"), request("c1")])
                var changes = StoreChanges()
                changes.save(Watch(customer: customer("c0"), sku: sku("s0"), mode: .once, minQuantity: 1, position: 1, since: Date()))
                changes.inventory = [sku("s0"): 3]
                changes.mirrored = [customer("c0")]
                changes.alertsRaised = [sku("s0"): 2]
                changes.publications = [Publication(key: "k", topic: "t", payload: [1], retain: false)]
                changes.processedThrough = 1
                try a.commit(changes)
                _ = try a.deadLetter(journaled[1], error: Publication(key: "e", topic: "t", payload: [2], retain: false), reason: "r", at: Date())
                try a.beginAttempt(Attempt(first: 1, last: 2, suspectsThrough: 0), kills: 1)
                _ = try a.replaceInstance(with: "aaaaaaaaaaaa")
                // The same position and key in the other store: rows are keyed by store.
                try p.commit(changes)
                #expect(try p.journaledRequests(after: 0, limit: 9).isEmpty)
                #expect(try p.journal(batch: [request()]).map(\.seq) == [1], "each store's places start at 1")
                #expect(try p.deadLetterList().isEmpty && p.lastAttempt() == nil && p.replaceInstance(with: "x") == nil)
                #expect(try p.pendingPublications(after: 0, limit: 9).count == 1 && a.pendingPublications(after: 0, limit: 9).count == 2)
                // pear's commit recorded place 1 as applied (the same changes), so its one request counts as applied.
                #expect(try a.queueLengths() == (inbox: 0, outbox: 2, watches: 1) && p.queueLengths() == (inbox: 0, outbox: 1, watches: 1))
                #expect(try p.processedThrough() == 1 && a.processedThrough() == 2)
                try p.trimJournal(through: 9)
                #expect(try a.journaledRequests(after: 0, limit: 9).map(\.seq) == [1, 2])
                #expect(try a.report(at: Date(), sku: nil).alertsRaised.life == 2 && p.report(at: Date(), sku: nil).alertsRaised.life == 2)
                p.ownership.release()
                try a.ownership.check()
                #expect(try (a as? PostgresStoreStorage)?.lease.holder()?.released == false)
            }
        }

        @Test("the server stopped under an open storage gives retriable unavailable errors; once it is back, the storage works again")
        func outage() async throws {
            try await PrivatePostgres.with { server in
                let storage = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                #expect(try storage.journal(batch: [request()]).map(\.seq) == [1])
                try await server.stop()
                let failures: [(String, () throws -> Void)] = [
                    ("journal", { _ = try storage.journal(batch: [request()]) }),
                    ("read", { _ = try storage.journaledRequests(after: 0, limit: 9) }),
                    ("commit", { _ = try storage.commit(StoreChanges()) }),
                    ("renew", { try storage.ownership.renew(at: Date()) }),
                ]
                for (what, failing) in failures {
                    do {
                        try failing()
                        Issue.record("\(what) succeeded with the server stopped")
                    } catch let error as StorageError {
                        #expect(error.kind == .unavailable && error.isRetriable, "\(what): \(error)")
                    }
                }
                try await server.start()
                #expect(try storage.journal(batch: [request()]).map(\.seq) == [2])
                #expect(try storage.journaledRequests(after: 0, limit: 9).map(\.seq) == [1, 2])
                try storage.ownership.renew(at: Date())
            }
        }

        @Test("a server set read only (default_transaction_read_only) is not taken as one that takes writes: the error says none does, and may pass; once it takes writes again, the storage works")
        func readOnlyServer() async throws {
            try await PrivatePostgres.with { server in
                let storage = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                #expect(try storage.journal(batch: [request()]).map(\.seq) == [1])
                _ = try await server.psql("ALTER SYSTEM SET default_transaction_read_only = on")
                _ = try await server.psql("SELECT pg_reload_conf()")
                // A new connection reads the setting: the one open is dropped, as a failover does.
                (storage as! PostgresStoreStorage).session.disconnect()
                do {
                    _ = try storage.journal(batch: [request()])
                    Issue.record("a read-only server took a write")
                } catch let error as StorageError {
                    #expect(error.kind == .unavailable && error.isRetriable, "\(error)")
                    #expect("\(error)".contains("takes writes now"), "\(error)")
                }
                _ = try await server.psql("ALTER SYSTEM RESET default_transaction_read_only")
                _ = try await server.psql("SELECT pg_reload_conf()")
                #expect(try storage.journal(batch: [request()]).map(\.seq) == [2])
            }
        }

        @Test("a start given several servers that take writes takes the one whose journal goes furthest, also when the broker's witness set its mark (found by an outside trial: it took the first that held the witness, a former primary); with no server usable, each one's reason is named")
        func furthestDespiteAWitness() async throws {
            try await PrivatePostgres.with { former in
                try await PrivatePostgres.with { promoted in
                    for (server, place) in [(former, 885), (promoted, 1_501)] {
                        let storage = try server.backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
                        storage.ownership.release()
                        storage.releaseDirectory()
                        _ = try await server.psql("UPDATE restock_store SET journal_place = \(place) WHERE store = 'apple'")
                    }
                    let both = PostgresStorage(settings: PostgresSettings(
                        try DatabaseURL(parsing: "postgres://postgres@127.0.0.1:\(former.port),127.0.0.1:\(promoted.port)/\(former.database)"), password: nil))
                    both.journalWitness?.witnessed(885, of: apple, on: "restock/apple/journal")
                    let storage = try both.open(for: apple, claim: .exclusive(instance: "bbbbbbbbbbbb"), now: Date())
                    #expect(try storage.journal(batch: [request()]).map(\.seq) == [1_502])
                    #expect(try await promoted.psql("SELECT owner FROM restock_lease WHERE store = 'apple'") == "bbbbbbbbbbbb")
                    #expect(try await former.psql("SELECT owner FROM restock_lease WHERE store = 'apple'") == "aaaaaaaaaaaa")
                    storage.ownership.release()
                    storage.releaseDirectory()

                    // Neither usable, each for a reason of its own: both named.
                    try await promoted.requirePassword(of: "pwuser", password: "s3cret")
                    let closed = try freeLoopbackPort()
                    let neither = PostgresStorage(settings: PostgresSettings(
                        try DatabaseURL(parsing: "postgres://pwuser@127.0.0.1:\(promoted.port),127.0.0.1:\(closed)/\(promoted.database)"), password: nil))
                    #expect {
                        _ = try neither.open(for: apple, claim: .exclusive(instance: "cccccccccccc"), now: Date())
                    } throws: { error in
                        let text = "\(error)"
                        return text.contains("no server of the list can be used: 127.0.0.1:\(promoted.port): the server asks for a password")
                            && text.contains("127.0.0.1:\(closed): connection refused")
                    }
                }
            }
        }
    }
}
