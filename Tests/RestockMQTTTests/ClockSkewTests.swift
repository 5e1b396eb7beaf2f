import RestockPipeline
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing

/// One live store per store id holds with clocks that disagree (docs/contract.md, "One store per store id"): stores
/// by ±10 minutes, clients by ±1 minute. Another instance is live when its heartbeat changes, timed by the reader's own
/// clock; no process compares a time written by another machine with its own.
@Suite("Clocks that disagree")
struct ClockSkewTests {
    func restock(_ arguments: [String], clockOffset: String? = nil) async throws -> CommandResult {
        let (executable, arguments) = FakeTime.command(restockExecutable, arguments, offset: clockOffset)
        return try await ChildProcess.run(
            executable, arguments, environment: FakeTime.environment(offset: clockOffset), within: 60, ownProcessGroup: clockOffset != nil)
    }

    @Test(
        "a store whose clock is 10 minutes ahead of, or behind, the live store's is refused, and takes no request",
        arguments: [(live: String?.none, challenger: String?.some("+10m")), (live: "+10m", challenger: nil)])
    func skewedStoreRefused(live: String?, challenger: String?) async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let first = try StoreProcess(broker: broker, clockOffset: live)
        try await first.start()
        let second = try StoreProcess(broker: broker, clockOffset: challenger)
        let child = try second.launch()
        for index in 0..<40 { try await mosquittoPub(broker, "restock/apple/subscribe/c\(index)", "ipad") }
        try await child.waitForExit(within: 30)
        #expect(child.exitStatus != 0)
        #expect(second.log.contains("is already running on this broker"), "\(second.log.suffix(400))")
        // Its data directory was empty, and is left so: the refused store kept nothing, so took no request.
        #expect(try FileManager.default.contentsOfDirectory(atPath: second.dataDirectory.path).isEmpty, "the refused store left files")
        try await StoreQueues.waitForWatches(40, in: first.dataDirectory, within: 30)
        #expect(first.exitStatus == nil)
        try await first.send(SIGTERM)
    }

    @Test("a client whose clock is a minute ahead of, or behind, the store's finds it online and gets its answer")
    func skewedClient() async throws {
        let broker = try await MosquittoBroker.start()
        // The store a minute ahead: a client on the machine's clock is a minute behind it, one two minutes ahead a minute ahead.
        let store = try StoreProcess(broker: broker, clockOffset: "+1m")
        try await store.start()
        for (customer, offset) in [("behind", String?.none), ("ahead", "+2m")] {
            let result = try await restock(["subscribe", "--broker", broker.url, "--customer", customer, "--sku", "ipad"], clockOffset: offset)
            #expect(result.status == 0, "\(customer): \(result.standardError)")
        }
        try await store.send(SIGTERM)
    }
}
