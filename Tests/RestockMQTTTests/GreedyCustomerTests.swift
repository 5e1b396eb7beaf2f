import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing
import Deadlines

/// One customer cannot take the store from the others (docs/contract.md, "Limits"): a watch limit per customer,
/// and a request rate per customer whose refusals are cheap and answered at most once a second.
@Suite("A greedy customer")
struct GreedyCustomerTests {
    func restock(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run(restockExecutable, arguments, within: 60)
    }

    @Test("a subscribe past the watch limit is refused too-many-watches and changes nothing; new terms for a watched SKU are taken")
    func watchLimit() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--max-watches-per-customer", "3"])
        try await store.start()
        for item in ["a", "b", "c"] {
            let result = try await restock(["subscribe", "--broker", broker.url, "--customer", "alice", "--sku", item])
            #expect(result.status == 0, "\(result.standardError)")
        }
        let fourth = try await restock(["subscribe", "--broker", broker.url, "--customer", "alice", "--sku", "d"])
        #expect(fourth.status != 0)
        #expect(
            fourth.standardError == "error: refused (too-many-watches): alice already watches 3 SKUs, the most one customer may watch: unsubscribe from one first\n",
            "\(fourth.standardError)")
        let newTerms = try await restock(["subscribe", "--broker", broker.url, "--customer", "alice", "--sku", "b", "--every"])
        #expect(newTerms.status == 0, "\(newTerms.standardError)")
        let watching = try await restock(["watching", "--broker", broker.url, "--customer", "alice"])
        #expect(!watching.standardOutput.contains(" d "), "\(watching.standardOutput)")
        #expect(try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches == 3)
        try await store.send(SIGTERM)
    }

    @Test("a customer over the rate limit is refused rate-limited, answered at most once a second, and another customer's subscribe still confirms promptly")
    func rateLimit() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--customer-rate", "2", "--customer-burst", "5"])
        try await store.start()
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/mallory/errors")
        // mallory sends 300 subscribes, each for another SKU, as fast as mosquitto_pub can.
        let began = ContinuousClock.now
        let flood = (0..<300).map { (topic: "restock/apple/subscribe/mallory", payload: Array("sku-\($0)".utf8)) }
        try await Requests.publish(flood, to: broker.url)
        let sent = ContinuousClock.now - began
        // Meanwhile bob's request is applied, within the command's own wait (how soon is make reliability's row G1).
        let bob = try await restock(["subscribe", "--broker", broker.url, "--customer", "bob", "--sku", "ipad"])
        #expect(bob.status == 0, "\(bob.standardError)")
        try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 30)
        let elapsed = ContinuousClock.now - began
        let watches = try StoreDatabase.queueLengths(readingOnly: store.dataDirectory).watches - 1  // bob's
        // At most the burst, and two a second since the flood began.
        #expect(watches >= 5 && Double(watches) <= 5 + 2 * elapsed.seconds + 1, "mallory got \(watches) watches in \(elapsed) (sent in \(sent))")
        let refusals = errors.payloads(ErrorReport.self, on: "restock/apple/customers/mallory/errors")
        #expect(!refusals.isEmpty && refusals.allSatisfy { $0.error == "rate-limited" }, "\(refusals.prefix(3))")
        #expect(Double(refusals.count) <= elapsed.seconds + 1, "\(refusals.count) refusals answered in \(elapsed)")
        #expect(refusals.first?.detail.contains("mallory sent requests too fast") == true, "\(refusals.first?.detail ?? "")")
        try await store.send(SIGTERM)
    }
}
