import Deadlines
import Foundation
import Logging
import RestockPipeline
import RestockPostgres
import RestockTestSupport
import ServiceLifecycle
import Testing

@testable import RestockMQTT

/// The journal witness (docs/contract.md, "Journal witness"): a store on PostgreSQL keeps how far its journal goes on
/// the broker, retained, and a store that starts uses no database server behind it — the one thing that tells a
/// former primary started again on its own from the promoted server, when it is the only one that answers.
@Suite("The journal witness, on PostgreSQL over a broker in memory", .postgresServer, .timeLimit(.minutes(3)))
struct JournalWitnessTests {
    static func witness(_ through: Int64) -> [UInt8] { JournalWitnessPayload(store: apple, through: through).payloadBytes() }

    @Test("the store publishes how far its journal goes, retained, as it grows; a store started while the witness goes further than the database is refused in one line naming the topic, and takes nothing there; so is a witness it cannot read, or another store's; cleared, the store starts")
    func witnessGuardsTheStart() async throws {
        let broker = InMemoryBroker()
        guard case .postgres(let settings) = try await Engine.postgresql.storage() else { return }
        let server = try #require(SuitePostgres.server)
        let first = LaunchedStore(standby: false, on: broker, backend: PostgresStorage(settings: settings))
        try await withDeadline(60, waitingFor: "the store online") { try await first.health.waitUntilOnline() }
        for customer in ["alice", "bob", "carol"] { broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/\(customer)") }
        try await waitUntil("the witness through 3", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: appleTopics.journalWitness)?.payload == Self.witness(3)
        }
        #expect(broker.retainedMessage(on: appleTopics.journalWitness)?.retain == true)
        try await first.stop()
        let epoch = try await server.psql("SELECT epoch FROM restock_lease WHERE store = 'apple'", in: settings.database)

        // Further than the database: what a former primary, started again on its own, looks like.
        broker.publish(Self.witness(50), to: appleTopics.journalWitness, retain: true)
        let refused = LaunchedStore(standby: false, on: broker, backend: PostgresStorage(settings: settings))
        let error = await #expect(throws: (any Error).self) {
            try await withDeadline(60, waitingFor: "the refused store to end") { try await refused.run.value }
        }
        let line = "\(error.map { "\($0)" } ?? "")"
        #expect(line.contains("takes writes but lacks requests this store committed (its journal ends at 3, the store's at 50, as the broker's journal witness restock/apple/journal says)"), "\(line)")
        #expect(line.contains("mosquitto_pub -r -n -t restock/apple/journal"), "\(line)")
        #expect(try await server.psql("SELECT epoch FROM restock_lease WHERE store = 'apple'", in: settings.database) == epoch, "the refused store took the lease")

        // Not a witness this store can read, or another store's: refused too, until an operator clears it (found by an
        // outside trial: a witness ignored so let a store start on a former primary, without 1,200 acknowledged requests).
        for odd in [
            "garbage", #"{"store":"pear","through":99}"#, #"{"store":"Apple","through":99}"#, #"{"store":"apple","through":-1}"#,
            #"{"store":"apple","through":1e300}"#, #"{"store":"apple","through":99999999999999999999999}"#, #"{"store":"apple","through":"99"}"#,
            #"{"store":"apple","through":99,"through":1}"#, #"{"store":"apple"}"#,
        ] {
            broker.publish(Array(odd.utf8), to: appleTopics.journalWitness, retain: true)
            let store = LaunchedStore(standby: false, on: broker, backend: PostgresStorage(settings: settings))
            let error = await #expect(throws: (any Error).self, "\(odd)") {
                try await withDeadline(60, waitingFor: "the store refused on \(odd)") { try await store.run.value }
            }
            let line = "\(error.map { "\($0)" } ?? "")"
            #expect(line.hasPrefix("the retained journal witness ") && line.contains("clear it (mosquitto_pub -r -n -t restock/apple/journal)"), "\(odd): \(line)")
            #expect(!line.contains("\n"), "\(odd): \(line)")
        }
        #expect(try await server.psql("SELECT epoch FROM restock_lease WHERE store = 'apple'", in: settings.database) == epoch, "a refused store took the lease")

        // Cleared by an operator (an empty retained message), after a restore on purpose: the store starts.
        broker.publish(Self.witness(50), to: appleTopics.journalWitness, retain: true)
        broker.publish([], to: appleTopics.journalWitness, retain: true)
        let cleared = LaunchedStore(standby: false, on: broker, backend: PostgresStorage(settings: settings))
        try await withDeadline(60, waitingFor: "the store online once the witness is cleared") { try await cleared.health.waitUntilOnline() }
        broker.publish(Array("mac".utf8), to: "restock/apple/subscribe/dave")
        try await waitUntil("the witness through 4", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: appleTopics.journalWitness)?.payload == Self.witness(4)
        }
        try await cleared.stop()
    }

    @Test("a standby held back by a witness further than the database takes over once an operator clears it (found by an outside trial: cleared, it still held the standby back, and no store ran)")
    func standbyFreedByClearing() async throws {
        let broker = InMemoryBroker()
        guard case .postgres(let settings) = try await Engine.postgresql.storage() else { return }
        let live = LaunchedStore(standby: false, on: broker, backend: PostgresStorage(settings: settings))
        try await withDeadline(60, waitingFor: "the store online") { try await live.health.waitUntilOnline() }
        broker.publish(Array("ipad".utf8), to: "restock/apple/subscribe/alice")
        try await waitUntil("the witness through 1", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: appleTopics.journalWitness)?.payload == Self.witness(1)
        }
        let standby = LaunchedStore(standby: true, on: broker, backend: PostgresStorage(settings: settings))
        try await waitUntil("the standby to wait", within: 60) { standby.log.text.contains("standby for store apple") }
        try await live.stop()

        broker.publish(Self.witness(50), to: appleTopics.journalWitness, retain: true)
        try await waitUntil("the standby to refuse the database", within: 60) {
            standby.log.text.contains("its journal ends at 1, the store's at 50, as the broker's journal witness restock/apple/journal says")
        }
        #expect(standby.health.readiness != .passing, "\(standby.log.text)")

        broker.publish([], to: appleTopics.journalWitness, retain: true)
        try await withDeadline(60, waitingFor: "the standby online once the witness is cleared") { try await standby.health.waitUntilOnline() }
        try await waitUntil("the witness through 1 again", within: 60, pollEvery: .milliseconds(5)) {
            broker.retainedMessage(on: appleTopics.journalWitness)?.payload == Self.witness(1)
        }
        try await standby.stop()
    }
}
