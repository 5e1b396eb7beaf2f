import Foundation
import RestockCore
import RestockTestSupport
import Deadlines

/// Where a benchmark's store keeps its state: a data directory of its own (SQLite, the default), or the database of a
/// private PostgreSQL server (`--database`) — so that B3, B4 and B5 run the same workload on both, in the same run.
struct BenchState {
    /// The server, on PostgreSQL; `nil` on SQLite.
    let postgres: PrivatePostgres?
    /// The data directory, on SQLite.
    private let directory: URL?

    /// Which backend, as the tables name it.
    var engine: String { postgres == nil ? "SQLite" : "PostgreSQL" }

    /// A new, empty state: a temporary data directory, or the server's database.
    init(on postgres: PrivatePostgres?) throws {
        self.postgres = postgres
        directory = postgres == nil ? try temporaryDirectory() : nil
    }

    /// A state holding `count` watches of `sku`, written straight through the storage (``StoreSeeding``).
    static func seeded(watches count: Int, of sku: String, mode: WatchMode, customerPrefix: String, on postgres: PrivatePostgres?) throws -> BenchState {
        guard let postgres else {
            return BenchState(postgres: nil, directory: try SeededStore.directory(watches: count, of: sku, mode: mode, customerPrefix: customerPrefix))
        }
        try StoreSeeding.write(SeededStore.watches(count, of: sku, mode: mode, customerPrefix: customerPrefix), intoDatabase: url(of: postgres), store: StoreID("apple"))
        return BenchState(postgres: postgres, directory: nil)
    }

    private init(postgres: PrivatePostgres?, directory: URL?) {
        self.postgres = postgres
        self.directory = directory
    }

    /// `restock serve` of store `apple` on `broker`, on this state.
    func store(on broker: MosquittoBroker) throws -> StoreProcess {
        try StoreProcess(broker: broker, dataDirectory: directory, database: postgres.map(Self.url(of:)))
    }

    /// Until the store holds `count` watches.
    func waitForWatches(_ count: Int, within seconds: Double) async throws {
        if let directory { return try await StoreQueues.waitForWatches(count, in: directory, within: seconds) }
        try await waitUntil("\(count) watches in the database", within: seconds, pollEvery: .milliseconds(50)) {
            try await count == self.rows(in: "restock_watch")
        }
    }

    /// Until every request is applied and every message acknowledged by the broker.
    func waitUntilDrained(within seconds: Double) async throws {
        if let directory { return try await StoreQueues.waitUntilDrained(directory, within: seconds) }
        try await waitUntil("the store's outbox to empty", within: seconds, pollEvery: .milliseconds(100)) {
            try await self.rows(in: "restock_outbox") == 0
        }
    }

    /// Removes the data directory (the server's database goes with the server).
    func remove() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func rows(in table: String) async throws -> Int {
        guard let postgres else { return 0 }
        return Int(try await postgres.psql("SELECT count(*) FROM \(table) WHERE store = 'apple'")) ?? -1
    }

    /// The URL a store is given for the server's database.
    static func url(of postgres: PrivatePostgres) -> String {
        "postgres://\(postgres.user)@\(postgres.host):\(postgres.port)/\(postgres.database)"
    }
}
