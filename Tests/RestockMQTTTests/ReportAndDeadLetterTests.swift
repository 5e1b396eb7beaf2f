import Deadlines
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import SeededRandom
import Synchronization
import Testing

/// Reports and dead letters end to end (docs/contract.md, "Reports", "Dead letters"): a real store and mosquitto.
@Suite("Reports and dead letters", .timeLimit(.minutes(3)))
struct ReportAndDeadLetterTests {
    func restock(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, environment: environment, within: 60)
    }

    @Test("an MQTT 5 admin gets the answer of a store connected over 3.1.1, which answers on admin/replies (found by the outside trial: report and dead-letters said the store did not answer)")
    func mqtt5AdminOf311Store() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker) { $0.connection.protocolVersion = .v311 }
        let admin = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        let report = try await admin.report(wait: 60)
        #expect(report.store == "apple")
        let letters = try await admin.deadLetters(wait: 60)
        #expect(letters.deadLetters.isEmpty)
        try await running.stop()
        try await broker.stop()
    }

    @Test("a retained report or dead-letter list request is refused retained-request, never answered; clearing one is nothing (found by the outside trial)")
    func retainedQuestionsRefused() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker)
        let errors = try await TopicWatcher(broker: broker, filter: appleTopics.adminErrors)
        let replies = try await TopicWatcher(broker: broker, filter: "\(appleTopics.adminReplies)/#")
        let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "retaining-admin"))
        try await client.connect()
        for topic in [appleTopics.adminReport, appleTopics.adminDeadLetters] {
            try await client.send(Array(#"{"id":"rq1"}"#.utf8), to: topic, retain: true).acknowledged()
        }
        try await errors.wait(for: "two retained-request refusals", within: 60) { watcher in
            watcher.payloads(ErrorReport.self, on: appleTopics.adminErrors).count(where: { $0.error == "retained-request" }) == 2
        }
        for topic in [appleTopics.adminReport, appleTopics.adminDeadLetters] {
            try await client.send([], to: topic, retain: true).acknowledged()
        }
        // A live question after the clearing ones is answered, and the clearing ones were not.
        let store = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        _ = try await store.report(wait: 60)
        #expect(replies.messages.count == 1, "\(replies.messages.map(\.payload))")
        #expect(errors.payloads(ErrorReport.self, on: appleTopics.adminErrors).count == 2)
        await client.disconnect()
        try await running.stop()
        try await broker.stop()
    }

    @Test("a report's counts match a generated workload, over MQTT 5 (response topic) and 3.1.1 (reply topic)")
    func reportMatchesWorkload() async throws {
        let broker = try await MosquittoBroker.start()
        let running = try await InProcessStore.start(broker: broker)
        // The workload, applied to a plain Store as the reference.
        let reference = try Store(id: apple)
        var generator = SplitMix64(seed: 24)
        let skus = ["tv", "radio", "lamp", "fan", "kettle"]
        var requests: [(topic: String, payload: String)] = []
        for index in 0..<40 {
            let who = customer("c\(index)")
            for item in skus.shuffled(using: &generator).prefix(Int.random(in: 1...3, using: &generator)) {
                let mode: WatchMode = Bool.random(using: &generator) ? .every : .once
                let minQuantity = Int.random(in: 1...4, using: &generator)
                try reference.subscribe(who, to: sku(item), mode: mode, minQuantity: minQuantity)
                requests.append((appleTopics.subscribe(who), #"{"sku":"\#(item)","mode":"\#(mode.rawValue)","minQuantity":\#(minQuantity)}"#))
            }
        }
        var raised: [String: Int] = [:]
        for (item, quantity) in [("tv", 2), ("radio", 5), ("tv", 0), ("tv", 4), ("lamp", 1)] {
            let alerts = try reference.changeStock(of: sku(item), .set(quantity)).alerts
            raised[item, default: 0] += alerts.count
            requests.append((appleTopics.adminStock, #"{"sku":"\#(item)","set":\#(quantity)}"#))
        }
        let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "workload"))
        try await client.connect()
        for request in requests { try await client.publish(request.payload, to: request.topic) }
        await client.disconnect()
        let expectedRaised = raised.values.reduce(0, +)
        #expect(expectedRaised > 0)

        let store = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        let settled = Mutex<StoreReport?>(nil)
        try await waitUntil("every alert raised and acknowledged", within: 60) {
            let report = try await store.report(wait: 60)
            settled.withLock { $0 = report }
            return report.alertsRaised.life == expectedRaised && report.alertsAcknowledged.life == expectedRaised
        }
        let report = try #require(settled.withLock { $0 } as StoreReport?)
        let watches = reference.snapshot.watches
        #expect(report.store == "apple")
        #expect(report.watches == watches.count)
        #expect(report.customers == Set(watches.map(\.customer)).count)
        #expect(report.alertsRaised.last24h == expectedRaised)
        for item in skus {
            let figures = report.skus.first { $0.sku == item }
            let line = watches.filter { $0.sku.rawValue == item }
            #expect((figures?.watching ?? 0) == line.count, "\(item)")
            #expect((figures?.waiting ?? 0) == line.count(where: \.isWaiting), "\(item)")
            #expect((figures?.alertsRaised.life ?? 0) == raised[item, default: 0], "\(item)")
            #expect((figures?.alertsAcknowledged.last24h ?? 0) == raised[item, default: 0], "\(item)")
        }

        // 3.1.1: the reply comes on admin/replies, known by its id; one SKU's figures only.
        let old = StoreClient(
            connection: BrokerSettings(broker: try BrokerAddress(url: broker.url), protocolVersion: .v311), topics: appleTopics)
        let tv = try await old.report(sku: sku("tv"), wait: 60)
        #expect(tv.skus == report.skus.filter { $0.sku == "tv" })
        #expect(tv.watches == report.skus.first { $0.sku == "tv" }?.watching)
        // The CLI prints the same figures.
        let printed = try await restock(["report", "--broker", broker.url, "--sku", "tv", "--wait", "60"])
        #expect(printed.status == 0, "\(printed.standardError)")
        #expect(printed.standardOutput.contains("tv\t\(tv.skus[0].watching)\t\(tv.skus[0].waiting)\t\(raised["tv", default: 0])"), "\(printed.standardOutput)")
        try await running.stop()
    }

    @Test("dead letters are listed with id, topic, payload, why and when; one is dropped, one replayed and applied")
    func deadLetters() async throws {
        let broker = try await MosquittoBroker.start()
        let fault = ["RESTOCK_FAULT": "trap-on-request:poison"]
        let store = try StoreProcess(broker: broker)
        try await store.start(extraEnvironment: fault)
        let watcher = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/#")
        try await mosquittoPub(broker, "restock/apple/subscribe/mallory", #"{"sku":"poison-a"}"#)
        try await mosquittoPub(broker, "restock/apple/subscribe/trudy", #"{"sku":"poison-b"}"#)
        // Each makes the store die twice before it is set aside: start it again, with the fault, until both are.
        let refused = { @Sendable (who: String) in
            watcher.payloads(ErrorReport.self, on: "restock/apple/customers/\(who)/errors").contains { $0.error == "request-failed" }
        }
        try await waitUntil("both requests set aside", within: 120) {
            if store.exitStatus != nil { try store.launch(extraEnvironment: fault) }
            return refused("mallory") && refused("trudy")
        }
        try await store.send(SIGTERM)
        try await store.start()  // without the fault from now on

        // Each request may be there more than once: one the broker delivered again after a crash (its acknowledgement
        // was not written yet) is set aside again (QoS 1, at least once).
        let listed = try await restock(["dead-letters", "--broker", broker.url, "--wait", "60"])
        #expect(listed.status == 0, "\(listed.standardError)")
        let entries = listed.standardOutput.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(entries.allSatisfy { $0.count == 5 && $0[4] == "the store failed while applying this request, twice" }, "\(listed.standardOutput)")
        #expect(entries.contains { $0.count == 5 && $0[2] == "restock/apple/subscribe/mallory" && $0[3] == #""{\"sku\":\"poison-a\"}""# }, "\(listed.standardOutput)")
        let ids = { (who: String) in entries.filter { $0.count == 5 && $0[2] == "restock/apple/subscribe/\(who)" }.compactMap { Int64($0[0]) } }
        let (mallory, trudy) = (ids("mallory"), ids("trudy"))
        try #require(!mallory.isEmpty && !trudy.isEmpty, "\(listed.standardOutput)")

        let dropped = try await restock(["dead-letters", "--broker", broker.url, "--drop", "\(mallory[0])", "--wait", "60"])
        #expect(dropped.status == 0 && dropped.standardOutput.contains("dead letter \(mallory[0]) dropped"), "\(dropped.standardOutput)\(dropped.standardError)")
        let replayed = try await restock(["dead-letters", "--broker", broker.url, "--replay", "\(trudy[0])", "--wait", "60"])
        #expect(replayed.status == 0 && replayed.standardOutput.contains("dead letter \(trudy[0]) replayed"), "\(replayed.standardOutput)\(replayed.standardError)")
        try await watcher.wait(for: "trudy's watch, replayed", within: 60) { watcher in
            watcher.payloads(SubscriptionsMirror.self, on: "restock/apple/customers/trudy/subscriptions").last?.watching.map(\.sku) == ["poison-b"]
        }
        let again = try await restock(["dead-letters", "--broker", broker.url, "--drop", "\(mallory[0])", "--wait", "60"])
        #expect(again.status != 0 && again.standardError.contains("no dead letter \(mallory[0])"), "\(again.standardError)")
        let left = try await restock(["dead-letters", "--broker", broker.url, "--wait", "60"])
        let remaining = Set(mallory.dropFirst()).union(trudy.dropFirst())
        if remaining.isEmpty {
            #expect(left.standardOutput == "no dead letters\n", "\(left.standardOutput)")
        } else {
            #expect(Set(left.standardOutput.split(separator: "\n").compactMap { Int64($0.split(separator: "\t")[0]) }) == remaining, "\(left.standardOutput)")
        }
        try await store.send(SIGTERM)
        let snapshot = try StoreDatabase.snapshot(readingOnly: store.dataDirectory)
        #expect(snapshot.watches.map(\.customer.rawValue) == ["trudy"])
    }
}
