import Foundation
import LocalBroker
import RestockTestSupport

/// What one statement committed in PostgreSQL costs a client: issue 35's floor of an alert's path on PostgreSQL is two
/// trips through the broker and one of these (a request must be committed, and flushed, before the broker counts it
/// delivered), measured as the C tools measure the broker's hop: with the server's own client, `pgbench` (libpq).
enum DatabaseRoundTrip {
    /// The median of `times` one-row `INSERT`s, each its own transaction (committed with its flush, `fsync` on), sent one
    /// after another by `pgbench` to `server`, in µs: from each statement sent to its commit's answer.
    static func medianMicroseconds(on server: PrivatePostgres, times: Int = 1_000) async throws -> Double {
        _ = try await server.psql("CREATE TABLE IF NOT EXISTS bench_round_trip (n integer)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-round-trip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("insert.sql")
        try "INSERT INTO bench_round_trip VALUES (1);\n".write(to: script, atomically: true, encoding: .utf8)
        let prefix = directory.appendingPathComponent("latency").path
        let result = try await ChildProcess.run(
            server.binaries.appendingPathComponent("pgbench").path,
            [
                "-h", server.host, "-p", String(server.port), "-U", server.user, "-n", "-t", String(times), "-f", script.path,
                "-l", "--log-prefix", prefix, server.database,
            ], within: 120)
        guard result.status == 0 else { throw BenchFailure("pgbench: \(result.standardError)") }
        // Each line of its log: client, transaction, latency in µs, script, epoch seconds, µs.
        var latencies: [Double] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasPrefix("latency") {
            let text = try String(contentsOfFile: directory.appendingPathComponent(file).path, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 2, let latency = Double(fields[2]) { latencies.append(latency) }
            }
        }
        guard latencies.count == times else { throw BenchFailure("pgbench logged \(latencies.count) of \(times) transactions") }
        return latencies.sorted()[times / 2]
    }
}
