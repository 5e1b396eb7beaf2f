import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport
import Deadlines

/// P1–P5: the store's state in PostgreSQL (docs/operations.md, "Running on PostgreSQL"), with real processes: a private
/// PostgreSQL server (and a streaming replica for P5), mosquitto, stores started as `restock serve --database`, and for
/// P3 and P4 two test hosts of the scenario's own (``TestHost``: network namespaces), each running a store with a data
/// directory of its own and nothing shared but the database and the broker.
///
/// Every row has the same shape: 2,000 customers watch a SKU; a restock fans out to them while 2,000 more subscribe to
/// another; the fault comes in the middle of both; then a restock of the other SKU. Every customer must be alerted, a
/// repeat only with the same alert id.
enum OnPostgres {
    static let customers = 2_000

    /// P1: the live store SIGKILLed mid fan-out; a standby with its own data directory takes over.
    static func storeKilled() async throws -> ScenarioRow {
        try await Rig.run { rig in
            let live = try rig.store(), standby = try rig.store(standby: true)
            try await live.start()
            try await rig.waitForStandby(standby)
            let row = try await rig.fanOut(
                "P1", "PostgreSQL: the live store SIGKILLed mid fan-out and mid stream of 2,000 subscribes; a standby on its own data directory takes over",
                live: live
            ) { clock in
                try await live.send(SIGKILL)
                let killed = clock.now
                try await rig.waitForTakeover(by: standby)
                return ("standby online", clock.now - killed)
            }
            try await standby.send(SIGTERM)
            return row
        }
    }

    /// P2: the database stopped at once (`pg_ctl -m immediate`) mid fan-out, and started again: the store waits it out
    /// (pausing what must write) and goes on by itself.
    static func databaseRestarted() async throws -> ScenarioRow {
        try await Rig.run { rig in
            let live = try rig.store()
            try await live.start()
            var row = try await rig.fanOut(
                "P2", "PostgreSQL stopped at once (immediate) mid fan-out and mid stream of 2,000 subscribes, then started again",
                live: live
            ) { clock in
                try await rig.database.stop()
                // Its lease is renewed every second: the first renewal that fails says so.
                try await waitUntil("the store to find the database gone", within: 60) { live.log.contains("cannot renew the store's lease now") }
                try await rig.database.start()
                let started = clock.now
                try await waitUntil("the store to write again", within: 60) { live.log.contains("renewed the store's lease again") }
                return ("writing again", clock.now - started)
            }
            row.failures += live.exitStatus.map { ["the store exited (\($0)) instead of pausing: \(live.log.suffix(500))"] } ?? []
            try await live.send(SIGTERM)
            return row
        }
    }

    /// P3 and P4: the live store on one test host, its standby on another; the live host's link cut (`frozen`: the
    /// process stopped instead). The standby takes over; the old store, back, writes and publishes nothing and exits
    /// non-zero naming the newer owner.
    static func hostLost(frozen: Bool) async throws -> ScenarioRow {
        guard TestHost.available else {
            var row = ScenarioRow(frozen ? "P4" : "P3", "test hosts need root (ip netns)", expected: 0, distinct: 0, deliveries: 0)
            row.failures.append("not run: this process is not root, and `ip netns` needs it")
            return row
        }
        let first = try await TestHost.make(1)
        let second: TestHost
        do { second = try await TestHost.make(2) } catch {
            await first.remove()
            throw error
        }
        do {
            let row = try await Rig.run(hosts: [first, second]) { rig in
                let live = try rig.store(on: first), standby = try rig.store(on: second, standby: true)
                try await live.start()
                try await rig.waitForStandby(standby)
                let process = try live.launchedProcess()
                var row = try await rig.fanOut(
                    frozen ? "P4" : "P3",
                    frozen
                        ? "PostgreSQL: the live store's process frozen (SIGSTOP) on its test host mid fan-out; the standby on another host takes over; the old one resumed"
                        : "PostgreSQL: the live store's test host cut off (link down) mid fan-out; the standby on another host takes over; the link back",
                    live: live
                ) { clock in
                    if frozen { process.send(SIGSTOP) } else { try await first.cut() }
                    let lost = clock.now
                    try await rig.waitForTakeover(by: standby)
                    return ("standby online", clock.now - lost)
                }
                // The old store back: fenced by the lease's epoch, it must exit non-zero, naming the newer owner.
                let published = rig.collector.total
                if frozen { process.send(SIGCONT) } else { try await first.restore() }
                do {
                    try await waitUntil("the old store to exit", within: 90) { live.exitStatus != nil }
                } catch {
                    row.failures.append("the old store, back, did not exit within 90 s: \(live.log.suffix(600))")
                    try? await live.send(SIGKILL)
                }
                let status = live.exitStatus ?? 0
                row.check(status != 0, "the old store exited with \(status), not non-zero")
                row.check(
                    live.log.contains("took the store's lease over") || live.log.contains("took over"),
                    "the old store's log does not name the newer owner: \(live.log.suffix(600))")
                row.notes.append("the old store exited \(status) once back; \(rig.collector.total - published) deliveries after its return")
                try await standby.send(SIGTERM)
                return row
            }
            await first.remove()
            await second.remove()
            return row
        } catch {
            await first.remove()
            await second.remove()
            throw error
        }
    }

    /// P5: the primary lost at once mid fan-out and its synchronous streaming replica promoted; the store, given both,
    /// finds the promoted one.
    static func promotion() async throws -> ScenarioRow {
        try await Rig.run(replica: true) { rig in
            let live = try rig.store()
            try await live.start()
            guard let replica = rig.replica else { throw TestHostFailure(reason: "the rig has no replica") }
            var row = try await rig.fanOut(
                "P5", "PostgreSQL primary stopped at once mid fan-out; its synchronous streaming replica promoted; the store given both",
                live: live
            ) { clock in
                try await rig.database.stop()
                let lost = clock.now
                try await replica.promote()
                try await waitUntil("the store on the promoted server", within: 90) {
                    live.log.contains("connected to PostgreSQL at \(replica.host):\(replica.port)")
                }
                return ("on the promoted server", clock.now - lost)
            }
            row.failures += live.exitStatus.map { ["the store exited (\($0)): \(live.log.suffix(500))"] } ?? []
            try await live.send(SIGTERM)
            return row
        }
    }
}

/// What every P row runs on: a broker and a database (listening on the test hosts' gateways too), an alert collector.
private struct Rig {
    let broker: MosquittoBroker
    let database: PrivatePostgres
    /// A synchronous streaming replica of ``database``, for P5.
    let replica: PrivatePostgres?
    let collector: AlertCollector

    /// Starts the rig, runs `body`, and stops what it started, whatever `body` did.
    static func run<T>(hosts: [TestHost] = [], replica withReplica: Bool = false, _ body: (Rig) async throws -> T) async throws -> T {
        let gateways = hosts.map(\.gateway)
        let database = try await PrivatePostgres.launch(listenAddresses: gateways)
        do {
            let broker = try await MosquittoBroker.start(MosquittoBroker.Options(listenAddresses: gateways))
            let collector = try await AlertCollector(broker: broker)
            let value: T
            if withReplica {
                value = try await database.withReplica(synchronous: true) { replica in
                    try await body(Rig(broker: broker, database: database, replica: replica, collector: collector))
                }
            } else {
                value = try await body(Rig(broker: broker, database: database, replica: nil, collector: collector))
            }
            await collector.close()
            try await database.stop()
            return value
        } catch {
            try? await database.stop()
            throw error
        }
    }

    /// A store on this machine (given the replica first, when there is one: a server that takes no writes is passed
    /// over), or on `host`, reaching the broker and the database through its gateway.
    func store(on host: TestHost? = nil, standby: Bool = false) throws -> StoreProcess {
        let address = host?.gateway ?? database.host
        var servers = ["\(address):\(database.port)"]
        if let replica { servers.insert("\(replica.host):\(replica.port)", at: 0) }
        let url = "postgres://\(database.user)@\(servers.joined(separator: ","))/\(database.database)"
        let http = host.map { ["--http", "\($0.address):0"] } ?? []
        return try StoreProcess(
            brokerList: "mqtt://\(host?.gateway ?? "127.0.0.1"):\(broker.port)", statusBroker: try BrokerSettings(url: broker.url),
            database: url, extraArguments: (standby ? ["--standby"] : []) + http, commandPrefix: host?.commandPrefix ?? [])
    }

    func waitForStandby(_ standby: StoreProcess) async throws {
        try standby.launch()
        try await waitUntil("the standby to wait", within: 60) {
            if let status = standby.exitStatus { throw StoreExited(status: status, log: standby.log) }
            return standby.log.contains("standby for store")
        }
    }

    func waitForTakeover(by standby: StoreProcess) async throws {
        let client = try broker.storeClient()
        try await waitUntil("the standby online", within: 90) {
            if let status = standby.exitStatus { throw StoreExited(status: status, log: standby.log) }
            guard standby.log.contains("takes over") else { return false }
            return (try? await client.status())?.isOnline == true
        }
    }

    /// How many watches of `sku` the database holds: the primary's count, or the replica's once the primary is gone.
    func watches(of sku: String) async -> Int? {
        for server in [database] + (replica.map { [$0] } ?? []) {
            if let count = try? await server.psql("SELECT count(*) FROM restock_watch WHERE store = 'apple' AND sku = '\(sku)'") {
                return Int(count)
            }
        }
        return nil
    }

    /// The row's shape: 2,000 customers watch `p-first`; its restock fans out while 2,000 more subscribe to `p-later`,
    /// and `fault` strikes once the fan-out has begun (it returns what it measured, and how long it took); then `p-later`
    /// is restocked. Every customer must be alerted, a repeat only with the same id.
    func fanOut(
        _ id: String, _ action: String, live: StoreProcess,
        fault: (ContinuousClock) async throws -> (what: String, took: Duration)
    ) async throws -> ScenarioRow {
        let count = OnPostgres.customers
        let first = Requests.customers(count, prefix: "\(id.lowercased())a-"), later = Requests.customers(count, prefix: "\(id.lowercased())b-")
        try await Requests.publish(Requests.subscriptions(first, to: "p-first"), to: broker.url)
        try await waitUntil("\(count) watches in PostgreSQL", within: 120) { await watches(of: "p-first") == count }
        let sending = Task { try await Requests.publish(Requests.subscriptions(later, to: "p-later"), to: broker.url) }
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"p-first","set":\#(count)}"#)
        try await waitUntil("the fan-out to begin", within: 60) { collector.total > 0 }
        let atFault = collector.distinct
        let (what, took) = try await fault(ContinuousClock())
        try await sending.value
        try await waitUntil("\(count) later watches", within: 120) { await watches(of: "p-later") == count }
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"p-later","set":\#(count)}"#)
        try? await waitUntil("every alert", within: 120) { collector.distinct >= 2 * count }

        var row = ScenarioRow(id, action, expected: 2 * count, distinct: collector.distinct, deliveries: collector.total)
        let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        row.notes.append("\(what) \(String(format: "%.2f", seconds)) s after the fault; \(atFault) of \(count) alerted when it struck")
        row.check(collector.idsByCustomer.values.allSatisfy { $0.count == 1 }, "a repeat carried a different id")
        row.check(Set(collector.idsByCustomer.keys) == Set(first + later), "the customers alerted are not the ones subscribed")
        return row
    }
}
