import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// S4: 50,000 generated requests, most of them hostile (mutated payloads, boundary integers, odd JSON,
/// retained, QoS 0 and 2, topics with extra levels), at a running store, then two restarts. It passes when the
/// store never exits, answers every refusable request, raises exactly the reference's alerts, and ends in the
/// reference's state.
enum HostileStreamScenario {
    static let count = 50_000
    static let seed: UInt64 = 0x5EED_0011

    static func run() async throws -> ScenarioRow {
        let stream = try HostileStream(count: count, seed: seed)
        let broker = try await MosquittoBroker.start()
        // 50,000 requests of 30 customers against a reference that does not model time: no rate limit.
        let store = try StoreProcess(broker: broker, extraArguments: ["--customer-rate", "off"])
        try await store.start()
        let tap = try await MessageTap(
            url: broker.url, filters: ["restock/apple/customers/+/errors", "restock/apple/admin/errors", "restock/apple/customers/+/alerts"])
        @Sendable func errors() -> Int { tap.messages.filter { $0.topic.hasSuffix("/errors") }.count }
        @Sendable func alerts() -> [String] {
            // Each process of the store numbers its alerts in its own epoch (`apple-{epoch}-{n}`, docs/contract.md); the
            // reference, one process with no epoch, `apple-{n}`. The sequence goes on across restarts, so {n} is compared.
            tap.messages.filter { $0.topic.hasSuffix("/alerts") }.compactMap { try? RestockAlert(jsonData: Data($0.payload)).id }
                .map { id in
                    let parts = id.split(separator: "-")
                    return parts.count == 3 ? "\(parts[0])-\(parts[2])" : id
                }
        }

        try await publish(stream.requests, to: broker.url)
        // A marker sent after them all: once it is answered, every QoS 1 request before it has been applied.
        let sentinel = try StoreClient(
            connection: BrokerSettings(url: broker.url), topics: RestockTopics(store: StoreID("apple")))
        // (A customer of its own, whose answer no other request's refusal can be taken for; it changes nothing.)
        let marker = try CustomerID("sentinel")
        try await sentinel.unsubscribe(marker, from: nil, wait: 120)
        let minimum = stream.refusals
        let expectedAlerts = stream.alertIDs
        try? await waitUntil("the refusals answered", within: 60) { errors() >= minimum && Set(alerts()) == expectedAlerts }
        let answeredBeforeRestarts = errors()
        let alive = store.exitStatus == nil

        for round in 1...2 {
            try await store.send(SIGTERM)
            try await store.start()
            try await sentinel.unsubscribe(marker, from: nil, wait: 60)
            _ = round
        }
        let answeredAfterRestarts = errors() - answeredBeforeRestarts
        let received = alerts()
        let snapshot = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        await tap.close()
        try await store.send(SIGTERM)

        let expectedAnswers = stream.refusals + stream.unorderedRefusals
        var row = ScenarioRow(
            "S4", "\(count) generated requests (seed \(String(seed, radix: 16))): mutated payloads, boundary integers, odd JSON, retained, QoS 0/1/2, extra topic levels; then 2 restarts",
            expected: stream.alertIDs.count, distinct: Set(received).intersection(stream.alertIDs).count, deliveries: received.count)
        row.notes.append(
            "\(stream.refusals) refusable QoS 1 requests, \(answeredBeforeRestarts) answers (\(stream.unorderedRefusals) more refusable at QoS 0/2, \(stream.unanswerable) with no one to answer); \(stream.alertIDs.count) alerts")
        row.check(alive, "the store exited during the stream")
        row.check(answeredBeforeRestarts >= stream.refusals && answeredBeforeRestarts <= expectedAnswers,
            "answers: \(answeredBeforeRestarts), expected \(stream.refusals)…\(expectedAnswers)")
        row.check(answeredAfterRestarts == 0, "\(answeredAfterRestarts) answers after the restarts: a request was replayed")
        row.intrusions = Set(received).subtracting(stream.alertIDs).count
        let expected = stream.reference.snapshot
        func lines(_ watches: [Watch]) -> [String] {
            watches.sorted { $0.position < $1.position }.map { "\($0.customer) \($0.sku) \($0.mode) \($0.minQuantity) \($0.position) \($0.isWaiting)" }
        }
        // A SKU at 0 is the same as one never stocked (the database keeps the row, the in-process store need not).
        let inventory = snapshot.inventory.filter { $0.value != 0 }
        row.check(lines(snapshot.watches) == lines(expected.watches), "the watches differ from the reference's")
        let reference = expected.inventory.filter { $0.value != 0 }
        let differing = Set(inventory.keys).union(reference.keys).filter { inventory[$0] != reference[$0] }
        row.check(
            differing.isEmpty,
            "the inventory differs from the reference's: " + differing.sorted().prefix(5).map { "\($0): \(inventory[$0].map(String.init) ?? "none") vs \(reference[$0].map(String.init) ?? "none")" }.joined(separator: ", "))
        row.check(snapshot.nextAlertSequence == expected.nextAlertSequence, "the alert counter differs from the reference's")
        return row
    }

    /// Publishes every request in order from one client, each at its QoS and retain flag, many in flight.
    static func publish(_ requests: [HostileStream.Request], to url: String) async throws {
        let client = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: url), clientID: "hostile-\(UUID().uuidString.prefix(8))", maxInflight: 1_000))
        try await client.connect()
        try await client.sendAll(requests, window: 2_000) { try $0.send($1.payload, to: $1.topic, qos: $1.qos, retain: $1.retain) }
        await client.disconnect()
    }
}
