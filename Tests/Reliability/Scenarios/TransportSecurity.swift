import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// S3: the shipped configuration with its TLS listener turned on: the store and the `restock` CLI work over
/// mqtts://, and a client with a wrong CA, a wrong host name, or no TLS at all is refused.
enum TransportSecurity {
    static func run() async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.shipped(tls: true)
        guard let certificates = broker.certificates, let tlsPort = broker.tlsPort else { throw DeadlineExceeded(what: "a TLS listener", seconds: 0) }
        let secure = "mqtts://localhost:\(tlsPort)"
        let store = try StoreProcess(
            broker: broker, brokerURL: secure, extraArguments: ["--username", "store-apple", "--cafile", certificates.caFile],
            environment: ["RESTOCK_PASSWORD": "store-secret"])
        try await store.start(username: "admin", password: "admin-secret")

        func restock(_ arguments: [String], as user: String, _ password: String, broker url: String = secure, caFile: String? = nil)
            async throws -> CommandResult
        {
            try await ChildProcess.run(
                restockExecutable, arguments + ["--broker", url, "--username", user, "--cafile", caFile ?? certificates.caFile],
                environment: ["RESTOCK_PASSWORD": password], within: 90)
        }
        var failures: [String] = []
        func expectSuccess(_ result: CommandResult, _ what: String) {
            if result.status != 0 { failures.append("\(what): \(result.standardError)") }
        }
        expectSuccess(try await restock(["listen", "--customer", "alice", "--timeout", "1"], as: "alice", "alice-secret"), "listen")
        expectSuccess(try await restock(["subscribe", "--customer", "alice", "--sku", "vision-pro"], as: "alice", "alice-secret"), "subscribe")
        expectSuccess(try await restock(["stock", "--sku", "vision-pro", "--set", "3"], as: "admin", "admin-secret"), "stock")
        let listened = try await restock(["listen", "--customer", "alice", "--count", "1", "--timeout", "30", "--json"], as: "alice", "alice-secret")
        expectSuccess(listened, "listen for the alert")
        let alerts = listened.standardOutput.split(separator: "\n").compactMap { try? RestockAlert(jsonData: Data($0.utf8)) }

        // Each of these must fail to connect.
        let attempts: [(String, () async throws -> CommandResult)] = [
            ("a CA that did not sign the server's certificate", { try await restock(["inventory"], as: "alice", "alice-secret", caFile: certificates.otherCAFile) }),
            ("a host name the certificate does not carry (127.0.0.1)", { try await restock(["inventory"], as: "alice", "alice-secret", broker: "mqtts://127.0.0.1:\(tlsPort)") }),
            ("plain MQTT to the TLS port", {
                try await ChildProcess.run(
                    restockExecutable, ["inventory", "--broker", "mqtt://localhost:\(tlsPort)", "--username", "alice"],
                    environment: ["RESTOCK_PASSWORD": "alice-secret"], within: 90)
            }),
        ]
        var row = ScenarioRow(
            "S3", "store and CLI (listen, subscribe, stock) over mqtts:// with the shipped TLS listener; clients with a wrong CA, a wrong host name, no TLS",
            expected: 1, distinct: Set(alerts.map(\.id)).count, deliveries: alerts.count)
        for (what, attempt) in attempts {
            let result = try await attempt()
            if result.status == 0 {
                row.intrusions += 1
                row.notes.append("\(what): connected")
            } else {
                if !what.hasPrefix("plain") {
                    row.check(result.standardError.contains("certificate verify failed"), "\(what): the refusal does not name the certificate problem")
                }
                row.notes.append("\(what): refused, \"\(result.standardError.split(separator: "\n").last ?? "")\"")
            }
        }
        row.failures += failures
        try await store.send(SIGTERM)
        return row
    }
}
