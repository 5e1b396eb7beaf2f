import Deadlines
import Foundation
import Logging
import RestockCore
import RestockMQTT
import RestockTestSupport
import ServiceLifecycle
import Testing

/// A program that embeds the store can start it again on the same data directory as soon as `run()` has returned
/// (docs/embedding.md, "Stopping").
@Suite("The embedded store's data directory after a stop", .timeLimit(.minutes(2)))
struct EmbeddedRestartTests {
    @Test("the data directory is free once run() returns, cancelled or shut down (it stayed locked for 10 s)", arguments: [false, true])
    func directoryFreeAfterRun(graceful: Bool) async throws {
        let broker = try await MosquittoBroker.start()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = StoreService.Configuration(
            connection: try BrokerSettings(url: broker.url), store: try StoreID("apple"), dataDirectory: directory)
        let logger = Logger(label: "test.store")
        do {
            let service = try StoreService(configuration: configuration, logger: logger)
            let group = ServiceGroup(services: [service], logger: logger)
            let run = Task { try await group.run() }
            try await service.health.waitUntilOnline()
            if graceful { await group.triggerGracefulShutdown() } else { run.cancel() }
            _ = await run.result
        }
        // At once: the same directory opens again in this process.
        let again = try StoreService(configuration: configuration, logger: logger)
        let run = Task { try await again.run() }
        try await again.health.waitUntilOnline()
        run.cancel()
        _ = await run.result
    }
}
