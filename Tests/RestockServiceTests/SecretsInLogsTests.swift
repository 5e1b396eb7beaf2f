import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import Testing

/// No log line carries the broker password (docs/operations.md, "Logs"): the service lifecycle logs each service with
/// its fields at debug level, and the broker settings are among them (found by the operator trial: a debug log held
/// `password: Optional("store-secret")`).
@Suite("Secrets in logs")
struct SecretsInLogsTests {
    @Test("the broker settings, the client configuration and the store's launcher describe themselves without the password")
    func passwordLeftOut() throws {
        let secret = "s3cret-\(UUID().uuidString.prefix(6))"
        let settings = try BrokerSettings(url: "mqtt://store-apple:\(secret)@127.0.0.1:1883")
        #expect(settings.password == secret)
        let launcher = StoreLauncher(
            configuration: .init(connection: settings, store: try StoreID("apple"), dataDirectory: URL(filePath: "/tmp/restock-none")),
            standby: false, logger: .init(label: "test"), health: StoreHealth())
        let configuration = MQTTConfiguration(
            broker: settings.broker, clientID: "restock:apple", username: settings.username, password: settings.password)
        for description in [
            String(describing: settings), String(reflecting: settings), "\(launcher)", String(reflecting: launcher),
            String(describing: configuration), String(reflecting: configuration), "\([settings])",
        ] {
            #expect(!description.contains(secret), "\(description)")
            #expect(description.contains("127.0.0.1") || description.contains("apple"), "\(description)")
        }
    }
}
