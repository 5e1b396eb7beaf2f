import Foundation
import RestockCore
import RestockMQTT
import RestockTestSupport

/// B2, the restart: a store whose database holds 1,000,000 watches, seeded straight through
/// the store's database (``StoreSeeding``), started as `restock serve` until its retained status says online; and the same
/// restore in process (open the database, read every watch, rebuild the registry), to show where it goes.
struct StoreRestartBench {
    static let watches = 1_000_000
    let runs: Int

    func run(say: (String) -> Void) async throws -> (process: Samples, inProcess: Samples) {
        let data = try SeededStore.directory(watches: Self.watches, of: "restart-1", mode: .once, customerPrefix: "w")
        defer { try? FileManager.default.removeItem(at: data) }
        let broker = try await BenchBroker.start()
        var result = (process: Samples(), inProcess: Samples())
        for run in 1...runs {
            result.inProcess.append(try restoreInProcess(data))

            let process = try StoreProcess(broker: broker, dataDirectory: data)
            let launched = nanoseconds()
            try await process.start()
            result.process.append(seconds(since: launched))
            try await process.send(SIGTERM)
            say("  B2 restart run \(run): restock serve online in \(Figure.format(result.process.values.last!)) s · in-process restore \(Figure.format(result.inProcess.values.last!)) s")
        }
        try await broker.stop()
        return result
    }

    /// Seconds to open the database and rebuild the store from it; the database is closed on return.
    private func restoreInProcess(_ data: URL) throws -> Double {
        let start = nanoseconds()
        let store = try StoreSeeding.restore(try StoreID("apple"), from: data)
        let elapsed = seconds(since: start)
        guard store.watchCount == Self.watches else { throw BenchFailure("restored \(store.watchCount) watches, expected \(Self.watches)") }
        return elapsed
    }
}
