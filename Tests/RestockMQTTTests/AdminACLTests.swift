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
