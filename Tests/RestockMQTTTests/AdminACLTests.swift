import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing

/// The shipped ACL (deploy/mosquitto/acl) and the admin's requests of issue 24: the admin alone may send them.
extension ProductionConfigTests {
    @Test("the admin may forget a customer; a customer may not, and the CLI says so in one line")
    func adminForget() async throws {
        let broker = try await MosquittoBroker.shipped()
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "alice", password: "alice-secret")
        let subscribed = try await restock(["subscribe", "--customer", "bob", "--sku", "tv", "--wait", "60"], user: "bob", password: "bob-secret", broker: broker)
        #expect(subscribed.status == 0, "\(subscribed.standardError)")

        let intruder = try await restock(["forget", "--customer", "bob"], user: "alice", password: "alice-secret", broker: broker)
        #expect(intruder.status != 0)
        #expect(intruder.standardError.split(separator: "\n").count == 1, "\(intruder.standardError)")
        #expect(intruder.standardError.contains("Not authorized"), "\(intruder.standardError)")

        let admin = try await restock(["forget", "--customer", "bob", "--wait", "60"], user: "admin", password: "admin-secret", broker: broker)
        #expect(admin.status == 0, "\(admin.standardError)")
        #expect(admin.standardOutput.contains("bob is forgotten (1 watches removed)"), "\(admin.standardOutput)")
        try await store.send(SIGTERM)
    }

    @Test("the admin may ask for the report and the dead letters, over MQTT 5 and 3.1.1; a customer may not")
    func adminQueries() async throws {
        let broker = try await MosquittoBroker.shipped()
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "alice", password: "alice-secret")
        for version in ["5", "3.1.1"] {
            let report = try await restock(["report", "--mqtt-version", version, "--wait", "60"], user: "admin", password: "admin-secret", broker: broker)
            #expect(report.status == 0 && report.standardOutput.contains("0 customers, 0 watches"), "\(version): \(report.standardError)")
            let letters = try await restock(["dead-letters", "--mqtt-version", version, "--wait", "60"], user: "admin", password: "admin-secret", broker: broker)
            #expect(letters.status == 0 && letters.standardOutput == "no dead letters\n", "\(version): \(letters.standardError)")
        }
        for command in [["report"], ["dead-letters"], ["dead-letters", "--drop", "1"]] {
            let intruder = try await restock(command + ["--wait", "3"], user: "alice", password: "alice-secret", broker: broker)
            #expect(intruder.status != 0, "\(command)")
            #expect(intruder.standardError.split(separator: "\n").count == 1, "\(command): \(intruder.standardError)")
        }
        try await store.send(SIGTERM)
    }
}

/// Issue 32, item 2: the store accepts the response topics the shipped ACL lets it publish on, one level under
/// `admin/replies/`, and refuses the others on `admin/errors`; its publishing connection stays up.
extension ProductionConfigTests {
    @Test("a response topic more than one level under admin/replies/ is refused invalid-field, never published on; the store's connection stays up (issue 32)")
    func responseTopicOneLevel() async throws {
        let broker = try await MosquittoBroker.shipped()
        let store = try StoreProcess(broker: broker, extraArguments: ["--username", "store-apple"], environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "alice", password: "alice-secret")
        let asAdmin = ["-u", "admin", "-P", "admin-secret"]
        let errors = try await TopicWatcher(broker: broker, filter: appleTopics.adminErrors, extra: asAdmin)
        let replies = try await TopicWatcher(broker: broker, filter: "\(appleTopics.adminReplies)/#", extra: asAdmin)
        let status = try await TopicWatcher(broker: broker, filter: appleTopics.status, extra: asAdmin)
        let admin = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "acl-admin", username: "admin", password: "admin-secret"))
        try await admin.connect()
        let refused = ["restock/apple/admin/replies/x/y", "restock/apple/admin/replies/a/b/c", "restock/apple/admin/replies/x/"]
        for (index, topic) in refused.enumerated() {
            for question in [appleTopics.adminReport, appleTopics.adminDeadLetters] {
                try await admin.publish(
                    Array(#"{"id":"bad\#(index)"}"#.utf8), to: question,
                    properties: MQTTMessageProperties(responseTopic: topic, correlationData: Array("bad\(index)".utf8)))
            }
        }
        try await admin.publish(
            Array(#"{"id":"good"}"#.utf8), to: appleTopics.adminReport,
            properties: MQTTMessageProperties(responseTopic: "restock/apple/admin/replies/good", correlationData: Array("good".utf8)))
        try await replies.wait(for: "the answer on the one-level response topic", within: 60) { watcher in
            watcher.messages.contains { $0.topic == "restock/apple/admin/replies/good" }
        }
        try await errors.wait(for: "six invalid-field refusals", within: 60) { watcher in
            watcher.payloads(ErrorReport.self, on: appleTopics.adminErrors).count(where: { $0.error == "invalid-field" }) == 6
        }
        let details = errors.payloads(ErrorReport.self, on: appleTopics.adminErrors).map(\.detail)
        #expect(details.allSatisfy { $0.contains("one level under restock/apple/admin/replies/") }, "\(details)")
        #expect(!replies.messages.contains { refused.contains($0.topic) }, "\(replies.messages)")
        // The publishing connection never dropped: no will, and the store logged no lost connection.
        #expect(!status.messages.contains { $0.payload.contains("connection-lost") }, "\(status.messages)")
        #expect(!store.log.contains("connection to the broker was lost"), "\(store.log)")
        await admin.disconnect()
        try await store.send(SIGTERM)
    }
}
