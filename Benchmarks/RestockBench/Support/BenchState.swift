import Foundation
import RestockCore
import RestockTestSupport
import Deadlines

/// Where a benchmark's store keeps its state: a data directory of its own (SQLite, the default), or a database of its
/// own on a private PostgreSQL server (`--database`) — so that B3, B4 and B5 run the same workload on both, in the same
/// run.
struct BenchState {
    /// The server, on PostgreSQL; `nil` on SQLite.
    let postgres: PrivatePostgres?
    /// The data directory, on SQLite; the database's name, on PostgreSQL.
    private let place: String

    /// A new, empty state: a temporary data directory, or a new database on `postgres`.
    static func make(on postgres: PrivatePostgres?) async throws -> BenchState {
        guard let postgres else { return BenchState(postgres: nil, place: try temporaryDirectory().path) }
        let name = "bench_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12))"
        _ = try await postgres.psql("CREATE DATABASE \(name)")
        return BenchState(postgres: postgres, place: name)
    }

    /// A new state holding `count` watches of `sku`, written straight through the storage (``StoreSeeding``).
    static func seeded(watches count: Int, of sku: String, mode: WatchMode, customerPrefix: String, on postgres: PrivatePostgres?) async throws -> BenchState {
        guard postgres != nil else {
            let directory = try SeededStore.directory(watches: count, of: sku, mode: mode, customerPrefix: customerPrefix)
            return BenchState(postgres: nil, place: directory.path)
        }
        let state = try await make(on: postgres)
        let watches = try SeededStore.watches(count, of: sku, mode: mode, customerPrefix: customerPrefix)
        try StoreSeeding.write(watches, intoDatabase: state.databaseURL!, store: StoreID("apple"))
        return state
    }

    private init(postgres: PrivatePostgres?, place: String) {
        self.postgres = postgres
        self.place = place
    }

    /// The URL a store is given, on PostgreSQL.
    var databaseURL: String? { postgres.map { "postgres://\($0.user)@\($0.host):\($0.port)/\(place)" } }

    private var directory: URL? { postgres == nil ? URL(fileURLWithPath: place) : nil }

    /// The data directory, on SQLite.
    var dataDirectory: URL? { directory }

    /// `restock serve` of store `apple` on `broker`, on this state.
    func store(on broker: MosquittoBroker, extraArguments: [String] = []) throws -> StoreProcess {
        try StoreProcess(broker: broker, dataDirectory: directory, database: databaseURL, extraArguments: extraArguments)
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

    /// Removes the data directory (a database goes with its server).
    func remove() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func rows(in table: String) async throws -> Int {
        guard let postgres else { return 0 }
        return Int(try await postgres.psql("SELECT count(*) FROM \(table) WHERE store = 'apple'", in: place)) ?? -1
    }
}
