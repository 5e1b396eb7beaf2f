import Deadlines
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Testing

/// Issue 32, item 3: `restock serve --max-watches N|off`, a bound on the watches of the whole store, end to end.
@Suite("Store-wide watch limit", .timeLimit(.minutes(3)))
struct StoreWideLimitTests {
    @Test("RESTOCK_MAX_WATCHES=3: a fourth watch is refused store-full on its customer's errors topic; terms change and unsubscribes go on; /metrics and /readyz say how full")
    func full() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0"], environment: ["RESTOCK_MAX_WATCHES": "3"])
        try await store.start()
        let url = try await store.httpURL()
        let errors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/errors")
        let mirrors = try await TopicWatcher(broker: broker, filter: "restock/apple/customers/+/subscriptions")
        for name in ["a", "b", "c"] { try await mosquittoPub(broker, "restock/apple/subscribe/\(name)", "tv") }
        try await mosquittoPub(broker, "restock/apple/subscribe/d", "tv")
        try await errors.wait(for: "d's store-full refusal", within: 30) { watcher in
            watcher.payloads(ErrorReport.self, on: "restock/apple/customers/d/errors").contains { $0.error == "store-full" }
        }
        let refusal = try #require(errors.payloads(ErrorReport.self, on: "restock/apple/customers/d/errors").first)
        #expect(refusal.detail.contains("the store holds 3 watches, the most it may hold (3)"), "\(refusal.detail)")
        #expect(!mirrors.messages.contains { $0.topic == "restock/apple/customers/d/subscriptions" })

        // a changes its terms, then b leaves: both taken, and d may subscribe then.
        try await mosquittoPub(broker, "restock/apple/subscribe/a", #"{"sku":"tv","mode":"every","minQuantity":2}"#)
        try await mirrors.wait(for: "a's new terms", within: 30) { watcher in
            watcher.messages.contains { $0.topic == "restock/apple/customers/a/subscriptions" && $0.payload.contains("\"every\"") }
        }
        try await mosquittoPub(broker, "restock/apple/unsubscribe/b", "tv")
        try await mosquittoPub(broker, "restock/apple/subscribe/d", "tv")
        try await mirrors.wait(for: "d's watch", within: 30) { watcher in
            watcher.messages.contains { $0.topic == "restock/apple/customers/d/subscriptions" && $0.payload.contains("\"tv\"") }
        }
        #expect(errors.messages.count == 1, "\(errors.messages)")

        try await waitUntil("the gauges", within: 30) {
            let metrics = try await httpGet(url + "/metrics").body
            return metrics.contains("restock_watches 3") && metrics.contains("restock_watches_max 3")
                && metrics.contains(#"restock_requests_refused_total{code="store-full"} 1"#)
        }
        let ready = try await httpGet(url + "/readyz")
        #expect(ready.status == 200 && ready.body.contains("; watches 3 of 3 (100.0%): full, new watches are refused store-full; state in "), "\(ready.body)")
        try await waitUntil("the log to say the store is full", within: 30) { store.log.contains("the store is full: it holds 3 watches") }
        try await store.send(SIGTERM)
    }

    @Test("--max-watches off: no limit; /readyz says so and the gauge is 0")
    func off() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0", "--max-watches", "off"])
        try await store.start()
        let url = try await store.httpURL()
        try await waitUntil("the gauge", within: 30) { try await httpGet(url + "/metrics").body.contains("restock_watches_max 0") }
        try await waitUntil("/readyz", within: 30) { try await httpGet(url + "/readyz").body.contains("; watches 0 (no limit); state in ") }
        try await store.send(SIGTERM)
    }
}
