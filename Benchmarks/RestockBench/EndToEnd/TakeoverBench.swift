import Foundation
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// The takeover on PostgreSQL (issue 34): a live store and a standby (`--standby --database`, nothing shared but the
/// database) on a private server; the live one SIGKILLed; timed until the standby says it takes over and its retained
/// status says online. Each run the standby that took over is the next live store, and a new standby starts.
struct TakeoverBench {
    let runs: Int

    /// Seconds from the SIGKILL to the standby online, one per run.
    func run(say: (String) -> Void, postgres: PrivatePostgres) async throws -> Samples {
        let broker = try await BenchBroker.start()
        let state = try await BenchState.make(on: postgres)
        let client = StoreClient(connection: try BrokerSettings(url: broker.url), topics: try RestockTopics(store: StoreID("apple")))
        var live = try state.store(on: broker)
        try await live.start()
        var took = Samples()
        for run in 1...runs {
            let standby = try state.store(on: broker, extraArguments: ["--standby"])
            try standby.launch()
            try await waitUntil("the standby to wait", within: 60) {
                if let status = standby.exitStatus { throw StoreExited(status: status, log: standby.log) }
                return standby.log.contains("standby for store")
            }
            try await live.send(SIGKILL)
            let killed = nanoseconds()
            try await waitUntil("the standby online", within: 60, pollEvery: .milliseconds(20)) {
                if let status = standby.exitStatus { throw StoreExited(status: status, log: standby.log) }
                guard standby.log.contains("takes over") else { return false }
                return (try? await client.status())?.isOnline == true
            }
            took.append(seconds(since: killed))
            say("  takeover on PostgreSQL, run \(run): the standby online \(Figure.format(took.values.last!)) s after the SIGKILL")
            live = standby
        }
        try await live.send(SIGTERM)
        try await broker.stop()
        return took
    }
}
