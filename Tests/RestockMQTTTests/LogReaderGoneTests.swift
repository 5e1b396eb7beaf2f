import Deadlines
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Testing

/// Output to a pipe whose reader has gone (found by an outside trial: `restock serve … | head -1` killed a live store
/// with SIGPIPE, and a refused start piped to `head -3` trapped with SIGILL).
@Suite("A reader of the output that has gone", .timeLimit(.minutes(2)))
struct LogReaderGoneTests {
    @Test("a store whose log goes to a pipe nobody reads any more comes online, serves, and stops cleanly")
    func storeKeepsServing() async throws {
        let broker = try await MosquittoBroker.start()
        let data = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let process = try Self.launch(["serve", "--broker", broker.url, "--data", data.path, "--log-level", "debug"])
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await waitUntil("the store online, or gone", within: 60) {
            if !process.isRunning { return true }
            return (try? await client.status())?.isOnline == true
        }
        #expect(process.isRunning, "the store ended: \(process.terminationReason == .uncaughtSignal ? "signal" : "exit") \(process.terminationStatus)")
        let mirror = try await client.subscribe(try CustomerID("alice"), to: try SKU("ipad"), wait: 30)
        #expect(mirror.watching.map(\.sku) == ["ipad"])
        process.terminate()
        try await waitUntil("the store stopped", within: 30) { !process.isRunning }
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    /// Launches `restock` with standard output and error to a pipe whose reading end is closed.
    static func launch(_ arguments: [String]) throws -> Process {
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: restockExecutable)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        try pipe.fileHandleForReading.close()
        try pipe.fileHandleForWriting.close()
        return process
    }
}
