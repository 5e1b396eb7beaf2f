import Deadlines
import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Testing

/// `restock serve --broker A,B` (docs/operations.md, "Past one broker"): the store moves to the next broker when its
/// own dies, and its log, `/readyz` and `restock_broker_current` say which one it is on.
@Suite("The store on a broker list", .timeLimit(.minutes(3)))
struct StoreOnBrokerListTests {
    @Test("the first broker SIGKILLed: the store goes on on the second, takes requests there, and says so (failed before: a list was refused)")
    func movesToTheNextBroker() async throws {
        let (first, second) = (try await MosquittoBroker.start(), try await MosquittoBroker.start())
        defer { Task { try? await second.stop() } }
        let store = try StoreProcess(broker: first, brokerURL: "\(first.url),\(second.url)", extraArguments: ["--http", "127.0.0.1:0"])
        try await store.start()
        let url = try await store.httpURL()
        try await waitUntil("/readyz to name the first broker", within: 30, pollEvery: .milliseconds(50)) {
            (try? await httpGet(url + "/readyz"))?.body.hasPrefix("ok: on \(first.url);") == true
        }
        #expect(try await httpGet(url + "/metrics").body.contains(#"restock_broker_current{broker="\#(first.url)"} 1"#))

        try await first.kill()
        try await waitUntil("/readyz to name the second broker", within: 60, pollEvery: .milliseconds(50)) {
            (try? await httpGet(url + "/readyz"))?.body.hasPrefix("ok: on \(second.url);") == true
        }
        let metrics = try await httpGet(url + "/metrics").body
        #expect(metrics.contains(#"restock_broker_current{broker="\#(second.url)"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"restock_broker_current{broker="\#(first.url)"} 0"#), "\(metrics)")
        #expect(store.log.contains("broker=\(second.url)"), "\(store.log)")
        // A request sent to the second broker is taken there.
        try await mosquittoPub(second, "restock/apple/subscribe/alice", "ipad")
        try await StoreQueues.waitForWatches(1, in: store.dataDirectory, within: 60)
        #expect(store.exitStatus == nil)
        try await store.send(SIGTERM)
    }
}
