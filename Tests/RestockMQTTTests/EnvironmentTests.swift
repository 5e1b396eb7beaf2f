import Foundation
import LocalBroker
import RestockTestSupport
import Testing

/// Options from `RESTOCK_*` variables, on real processes (docs/operations.md, "Configuration").
@Suite("Options from the environment", .timeLimit(.minutes(3)))
struct EnvironmentTests {
    @Test("RESTOCK_USERNAME alone, with no password, reaches a broker that lets only that user at the store's topics")
    func usernameAlone() async throws {
        // Anonymous clients may do nothing here: the user name must reach the broker (MQTT allows one without a password).
        let broker = try await MosquittoBroker.start(.init(acl: "user store-apple\ntopic readwrite restock/#\n"))
        let store = try StoreProcess(broker: broker, environment: ["RESTOCK_USERNAME": "store-apple"])
        try await store.start(username: "store-apple")
        let stock = try await ChildProcess.run(
            restockExecutable, ["stock", "--broker", broker.url, "--sku", "ipad", "--set", "2"],
            environment: ["RESTOCK_USERNAME": "store-apple"], within: 60)
        #expect(stock.status == 0 && stock.standardOutput == "ipad: 2 on hand\n", "\(stock.standardError)")
        try await store.send(SIGTERM)
    }
}
