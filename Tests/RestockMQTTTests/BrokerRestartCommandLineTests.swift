import Deadlines
import Foundation
import LocalBroker
import RestockTestSupport
import Testing

/// A broker killed and started again without its retained messages forgets the store's status until the store is
/// back. A command given `--wait` waits for the store within it, instead of calling it never online.
@Suite("The command line after a broker restart", .timeLimit(.minutes(3)))
struct BrokerRestartCommandLineTests {
    @Test("restock subscribe --wait 30 waits for a store whose status a restarted broker lost (failed at once before)")
    func waitsForTheStoreAfterABrokerRestart() async throws {
        let broker = try await MosquittoBroker.start()
        let store = try await StoreProcess.started(on: broker)
        let frozen = try store.launchedProcess()
        // The store is held while the broker restarts empty, so that the command meets the broker before the store is back.
        frozen.send(SIGSTOP)
        defer { frozen.send(SIGCONT) }
        try await broker.kill()
        try await broker.launch()
        let commandsBefore = broker.log.components(separatedBy: " as restock-cli-").count
        let output = try temporaryDirectory("subscribe-after-restart")
        defer { try? FileManager.default.removeItem(at: output) }
        let command = try ChildProcess(
            restockExecutable,
            ["subscribe", "--broker", broker.url, "--customer", "ben", "--sku", "pencil", "--wait", "30"],
            outputFile: output.appendingPathComponent("out"), errorFile: output.appendingPathComponent("err"))
        try await waitUntil("the command to reach the restarted broker", within: 30) {
            broker.log.components(separatedBy: " as restock-cli-").count > commandsBefore || command.exitStatus != nil
        }
        frozen.send(SIGCONT)
        let status = try await command.waitForExit(within: 60)
        let errors = (try? String(contentsOf: output.appendingPathComponent("err"), encoding: .utf8)) ?? ""
        #expect(status == 0, "\(errors)\nthe store's log ends: \(store.log.suffix(1500))")
        #expect(!errors.contains("has ever been online"))
    }

    @Test("without --wait, a store the broker has never seen is still refused at once")
    func unknownStoreWithoutWaitIsRefused() async throws {
        let broker = try await MosquittoBroker.start()
        let result = try await ChildProcess.run(
            restockExecutable, ["stock", "--broker", broker.url, "--store", "nowhere", "--sku", "x", "--set", "1"], within: 8)
        #expect(result.status == 1)
        #expect(result.standardError.hasPrefix("error: no store nowhere has ever been online on this broker"))
    }

    @Test("with --wait, a store that never comes is called never online once the wait is over")
    func unknownStoreWithWaitSaysSoAfterIt() async throws {
        let broker = try await MosquittoBroker.start()
        let result = try await ChildProcess.run(
            restockExecutable, ["stock", "--broker", broker.url, "--store", "nowhere", "--sku", "x", "--set", "1", "--wait", "1"], within: 30)
        #expect(result.status == 1)
        #expect(result.standardError.hasPrefix("error: no store nowhere has ever been online on this broker"), "\(result.standardError)")
    }
}
