import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import LocalBroker

/// The mosquitto configuration we ship (deploy/mosquitto), run for real on a private port.
@Suite("The shipped production configuration", .timeLimit(.minutes(3)))
struct ProductionConfigTests {
    func restock(_ arguments: [String], user: String, password: String, broker: MosquittoBroker) async throws -> CommandResult {
        try await ChildProcess.run(
            restockExecutable, arguments + ["--broker", broker.url, "--username", user], environment: ["RESTOCK_PASSWORD": password],
            within: 120)
    }

    @Test("with the demo credentials and the ACL, the whole flow works, and 1,500 alerts queued for an offline customer all arrive")
    func flowAndQueue() async throws {
        let broker = try await MosquittoBroker.shipped()
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "alice", password: "alice-secret")

        // alice's persistent session exists, then she goes away.
        let hello = try await restock(["listen", "--customer", "alice", "--timeout", "1"], user: "alice", password: "alice-secret", broker: broker)
        #expect(hello.status == 0, "\(hello.standardError)")
        let subscribed = try await restock(
            ["subscribe", "--customer", "alice", "--sku", "iphone-15", "--every"], user: "alice", password: "alice-secret", broker: broker)
        #expect(subscribed.status == 0, "\(subscribed.standardError)")

        // 1,500 restocks while she is away: more than mosquitto's default queue of 1,000.
        let lines = (0..<1_500).map { _ in #"{"sku":"iphone-15","set":0}"# + "\n" + #"{"sku":"iphone-15","set":1}"# }.joined(separator: "\n")
        let pub = try await ChildProcess.run(
            "mosquitto_pub",
            ["-p", String(broker.port), "-h", "127.0.0.1", "-u", "admin", "-P", "admin-secret", "-q", "1", "-t", "restock/apple/admin/stock", "-l"],
            input: Data((lines + "\n").utf8))
        #expect(pub.status == 0, "\(pub.standardError)")

        let back = try await restock(
            ["listen", "--customer", "alice", "--count", "1500", "--timeout", "90", "--json"], user: "alice", password: "alice-secret",
            broker: broker)
        #expect(back.status == 0, "\(back.standardError)")
        let alerts = back.standardOutput.split(separator: "\n").compactMap { try? RestockAlert(jsonData: Data($0.utf8)) }
        #expect(alerts.count == 1_500)
        #expect(Set(alerts.map(\.id)).count == 1_500)

        // A customer cannot write admin/stock: the broker refuses it, and the CLI says so in one line.
        let intruder = try await restock(["stock", "--sku", "iphone-15", "--set", "99"], user: "alice", password: "alice-secret", broker: broker)
        #expect(intruder.status != 0)
        #expect(intruder.standardError.contains("Not authorized"), "\(intruder.standardError)")
        try await store.send(SIGTERM)
    }

    @Test("each session's client id belongs to one user: the broker refuses every other user at CONNECT")
    func sessionsBelongToTheirUsers() async throws {
        let broker = try await MosquittoBroker.shipped()
        let apple = try StoreID("apple")
        let alice = SessionClientIDs.listening(try CustomerID("alice"), at: apple)
        let cases: [(user: String, password: String, clientID: String, allowed: Bool)] = [
            ("alice", "alice-secret", alice, true),
            ("bob", "bob-secret", alice, false),  // another customer's session
            ("admin", "admin-secret", alice, false),
            ("store-apple", "store-secret", alice, false),  // not even the store's user
            ("store-apple", "store-secret", SessionClientIDs.store(apple), true),
            ("alice", "alice-secret", SessionClientIDs.store(apple), false),  // the store's session
            ("store-apple", "store-secret", SessionClientIDs.store(try StoreID("pear")), false),  // another store's
            ("alice", "alice-secret", "restock:apple:alice:x", false),  // not a shape of the namespace
            ("alice", "alice-secret", "restock::alice", false),
            ("alice", "alice-secret", "restock:", false),
            ("alice", "alice-secret", "restock-cli-0123456789ab", true),  // outside the namespace: open to all users
            ("bob", "bob-secret", "anything-else", true),
        ]
        for entry in cases {
            let client = try MQTTClient(
                configuration: .init(
                    broker: try BrokerAddress(url: broker.url), clientID: entry.clientID, username: entry.user, password: entry.password,
                    connectTimeout: .seconds(10)))
            var connected = false
            do {
                _ = try await client.connect()
                connected = true
                await client.disconnect()
            } catch MQTTError.connectionRefused(_, let reason) {
                #expect(reason.contains("Not authorized"), "\(entry.user) as \(entry.clientID): \(reason)")
            }
            #expect(connected == entry.allowed, "\(entry.user) as \(entry.clientID): connected \(connected)")
        }
        #expect(broker.log.contains("restock_clientid: refused client id \(alice) for user bob"))

        // The CLI as bob, listening or subscribing as alice: refused in one line that says whose session it is.
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "alice", password: "alice-secret")
        let prepared = try await restock(["listen", "--customer", "alice", "--timeout", "1"], user: "alice", password: "alice-secret", broker: broker)
        #expect(prepared.status == 0, "\(prepared.standardError)")
        let intruder = try await restock(["listen", "--customer", "alice", "--timeout", "1"], user: "bob", password: "bob-secret", broker: broker)
        #expect(intruder.status != 0)
        #expect(intruder.standardError.split(separator: "\n").count == 1, "\(intruder.standardError)")
        #expect(intruder.standardError.contains("refused alice's listening session restock:apple:alice"), "\(intruder.standardError)")
        #expect(intruder.standardError.contains("only the user alice may use this session"), "\(intruder.standardError)")
        let subscribe = try await restock(["subscribe", "--customer", "alice", "--sku", "x"], user: "bob", password: "bob-secret", broker: broker)
        #expect(subscribe.status != 0)
        #expect(subscribe.standardError.contains("only the user alice may use this session"), "\(subscribe.standardError)")
        try await store.send(SIGTERM)

        // A user the broker does not let use the store's client ids cannot run the store: one line, at once, no retry loop.
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let intruderStore = try await ChildProcess.run(
            restockExecutable, ["serve", "--broker", broker.url, "--username", "bob", "--data", data.path],
            environment: ["RESTOCK_PASSWORD": "bob-secret"], within: 30)
        #expect(intruderStore.status != 0)
        let lines = intruderStore.standardError.split(separator: "\n").filter { $0.hasPrefix("error: ") }
        #expect(lines.count == 1 && lines[0].contains("refused the connection: Not authorized"), "\(intruderStore.standardError)")
    }
}
