import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// S2: the shipped password file and ACL against a customer (alice) going after another's (bob's) topics,
/// anonymous and wrong-password clients, and users whose names contain `/`. Meanwhile bob's and alice's own
/// alerts must keep arriving.
enum Authorization {
    static let carol = (user: "carol", password: "carol-secret")
    static let slashUsers = ["bob/x": "pw-slash-1", "x/bob": "pw-slash-2", "restock/apple/customers/bob": "pw-slash-3"]

    static func run() async throws -> [ScenarioRow] {
        let broker = try await MosquittoBroker.shipped(users: slashUsers.merging([carol.user: carol.password]) { $1 })
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "admin", password: "admin-secret")
        let admin = try StockStream(url: broker.url, sku: "mac", quantity: 2, username: "admin", password: "admin-secret")

        // The legitimate side: bob and alice, each as itself, watch "mac" and listen.
        let bob = try await CustomerSession("bob", url: broker.url, username: "bob", password: "bob-secret")
        let alice = try await CustomerSession("alice", url: broker.url, username: "alice", password: "alice-secret")
        try await bob.publish(#"{"sku":"mac","mode":"every"}"#, to: "restock/apple/subscribe/bob")
        try await alice.publish(#"{"sku":"mac","mode":"every"}"#, to: "restock/apple/subscribe/alice")
        try await StoreQueues.waitForWatches(2, in: store.dataDirectory, within: 30)
        try await admin.set(2)  // a first rise, so each attack starts from the state the last one left
        var rises = 1

        var rows: [ScenarioRow] = []
        let intruders: [(id: String, what: String, user: String, password: String)] =
            [("S2a", "customer alice against bob", "alice", "alice-secret")]
            + slashUsers.sorted { $0.key < $1.key }.enumerated().map { index, user in
                ("S2\(["c", "d", "e"][index])", "user named `\(user.key)` against bob", user.key, user.value)
            }
        for intruder in intruders {
            let before = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
            let attempt = try await Attack.run(as: intruder.user, password: intruder.password, broker: broker, admin: admin, bob: bob)
            rises += 1
            let raised = rises
            try? await waitUntil("bob's and alice's alerts", within: 20) { bob.distinct >= raised && alice.distinct >= raised }
            let after = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
            var row = ScenarioRow(
                intruder.id,
                "\(intruder.what): reads bob's alerts, subscriptions and errors (and `+`, `#` filters), publishes bob's subscribe and unsubscribe, writes admin/stock",
                expected: rises, distinct: bob.distinct, deliveries: bob.deliveries)
            row.intrusions = attempt.messagesRead + (after.watches.map(\.identity) == before.watches.map(\.identity) ? 0 : 1)
                + (after.inventory[try SKU("mac")] == before.inventory[try SKU("mac")] ? 0 : 1)
            row.notes += attempt.notes
            row.check(alice.distinct == rises, "alice's own alerts did not all arrive")
            rows.append(row)
        }

        // Clients that must not get in at all.
        var doors = ScenarioRow(
            "S2b", "anonymous client, wrong password, bob's password with alice's name: connect", expected: 0, distinct: 0, deliveries: 0)
        for (username, password) in [(String?.none, String?.none), ("bob", "wrong"), ("alice", "bob-secret")] {
            let client = try MQTTClient(
                configuration: .init(
                    broker: try BrokerAddress(url: broker.url), clientID: "door-\(UUID().uuidString.prefix(6))", username: username,
                    password: password, connectTimeout: .seconds(10)))
            do {
                _ = try await client.connect()
                doors.intrusions += 1
                doors.notes.append("\(username ?? "anonymous") got in")
                await client.disconnect()
            } catch {
                doors.notes.append("\(username ?? "anonymous"): \(error)")
            }
        }
        rows.insert(doors, at: 1)
        rows.append(try await sessionTakeover(broker: broker, admin: admin))
        await bob.close()
        await alice.close()
        try await store.send(SIGTERM)
        return rows
    }
}

extension Watch {
    /// What a forged request could change: who watches what, how, and in which place.
    var identity: String { "\(customer)/\(sku)/\(mode)/\(minQuantity)/\(position)" }
}

extension Authorization {
    /// alice connects with carol's client id while carol is away, taking over her persistent session: she
    /// must read none of carol's queued alerts, and carol must still get them all.
    static func sessionTakeover(broker: MosquittoBroker, admin: StockStream) async throws -> ScenarioRow {
        let away = try await CustomerSession(carol.user, url: broker.url, username: carol.user, password: carol.password)
        try await away.publish(#"{"sku":"carol-sku","mode":"every"}"#, to: "restock/apple/subscribe/carol")
        await away.close()
        let stream = try StockStream(url: broker.url, sku: "carol-sku", username: "admin", password: "admin-secret")
        try await stream.run(rises: 2)

        // alice tries carol's session: with the shipped plugin the broker refuses the connection before it
        // touches the session. Should it get in, whatever it reads of carol's is counted.
        let carolsSession = SessionClientIDs.listening(try CustomerID(carol.user), at: try StoreID("apple"))
        let sentinel = "sentinel-\(UUID().uuidString.prefix(6).lowercased())"
        var stolen = 0
        var notes: [String] = []
        do {
            let thief = try await MessageTap(
                url: broker.url, filters: ["restock/apple/customers/carol/alerts", "restock/apple/inventory/\(sentinel)"],
                username: "alice", password: "alice-secret", clientID: carolsSession, persistent: true)
            stolen = 1  // getting in at all is an intrusion: carol's queue is gone
            notes.append("alice got in as \(carolsSession)")
            try await admin.client.changeStock(of: try SKU(sentinel), .set(1), wait: 30)
            try await waitUntil("the sentinel", within: 30) { thief.count(on: "restock/apple/inventory/\(sentinel)") > 0 }
            stolen += thief.count(on: "restock/apple/customers/carol/alerts")
            await thief.close()
        } catch {
            notes.append("alice as \(carolsSession): \(error)")
        }

        let back = try await CustomerSession(carol.user, url: broker.url, username: carol.user, password: carol.password)
        try? await waitUntil("carol's 2 alerts", within: 20) { back.distinct >= 2 }
        var row = ScenarioRow(
            "S2f", "alice connects with carol's client id (\(carolsSession)) while carol is away with 2 alerts queued; carol comes back",
            expected: 2, distinct: back.distinct, deliveries: back.deliveries)
        row.intrusions = stolen
        row.notes += notes
        await back.close()
        return row
    }
}

/// One intruder's attempts on bob, with a sentinel: the intruder also reads a topic everyone may read,
/// written after everything of bob's, so once the sentinel arrives anything of bob's would have too.
enum Attack {
    struct Outcome {
        var messagesRead = 0
        var notes: [String] = []
    }

    static func run(
        as user: String, password: String, broker: MosquittoBroker, admin: StockStream, bob: CustomerSession
    ) async throws -> Outcome {
        var outcome = Outcome()
        let sentinel = "sentinel-\(UUID().uuidString.prefix(6).lowercased())"
        let tap = try await MessageTap(
            url: broker.url,
            filters: [
                "restock/apple/customers/bob/alerts", "restock/apple/customers/bob/subscriptions", "restock/apple/customers/bob/errors",
                "restock/apple/customers/+/alerts", "restock/apple/customers/#", "#", "restock/apple/inventory/\(sentinel)",
            ],
            username: user, password: password)

        // Requests on bob's behalf and on the admin's: the broker must refuse them.
        var refused = 0
        let forged = [
            ("restock/apple/subscribe/bob", #"{"sku":"forged"}"#), ("restock/apple/unsubscribe/bob", #"{"all":true}"#),
            ("restock/apple/admin/stock", #"{"sku":"mac","set":999}"#),
        ]
        for (topic, payload) in forged {
            // A client of its own for each: mosquitto 2.0.11 drops the connection of a client whose publish it
            // refuses (eclipse-mosquitto#2579), and libmosquitto would send the refused message again.
            let forger = try MQTTClient(
                configuration: .init(
                    broker: try BrokerAddress(url: broker.url), clientID: "forger-\(UUID().uuidString.prefix(6))", username: user,
                    password: password))
            try await forger.connect()
            do {
                try await withDeadline(10, waitingFor: "the broker's answer") { try await forger.publish(payload, to: topic) }
            } catch {
                refused += 1  // refused (0x87), or the connection dropped with the refusal
            }
            await forger.disconnect()
        }
        outcome.notes.append("\(refused) of \(forged.count) forged requests refused by the broker")

        // Bob's traffic: a mirror, an error report, an alert; then the sentinel.
        try await bob.publish(#"{"sku":"mac","mode":"every"}"#, to: "restock/apple/subscribe/bob")
        try await bob.publish(##"{"sku":"#"}"##, to: "restock/apple/subscribe/bob")
        try await admin.set(0)
        try await admin.set(2)
        try await admin.client.changeStock(of: try SKU(sentinel), .set(1), wait: 30)
        try await waitUntil("the sentinel", within: 30) { tap.count(on: "restock/apple/inventory/\(sentinel)") > 0 }
        outcome.messagesRead = tap.messages.filter { $0.topic.contains("/customers/bob/") }.count
        await tap.close()

        return outcome
    }
}
