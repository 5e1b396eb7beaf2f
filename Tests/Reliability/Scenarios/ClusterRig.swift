import Deadlines
import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Synchronization

/// What the cluster scenarios (C1–C4, `make cluster-test`) share: a 3-node NATS cluster, the store given every node as
/// its `--broker` list, and clients speaking MQTT 3.1.1 (NATS's MQTT listener speaks no MQTT 5).
struct ClusterRig {
    let cluster: NATSCluster

    /// Runs `scenario` on a cluster of its own, and stops every node after it, whatever happens (the run ends with
    /// `exit`, which would leave them running).
    static func run(_ scenario: (ClusterRig) async throws -> ScenarioRow) async throws -> ScenarioRow {
        let rig = ClusterRig(cluster: try await NATSCluster.start(nodes: 3))
        do {
            let row = try await scenario(rig)
            await rig.cluster.stop()
            return row
        } catch {
            await rig.cluster.stop()
            throw error
        }
    }

    /// A store on the list from node 0 on, started (online).
    func startedStore() async throws -> StoreProcess {
        let store = try store()
        try await store.start()
        return store
    }

    /// The row of a scenario whose alerts `collector` received, with `note`; every customer must have had one alert id.
    /// Closes the collector.
    static func row(_ id: String, _ action: String, _ collector: AlertCollector, note: String) async -> ScenarioRow {
        var row = ScenarioRow(id, action, expected: Cluster.customers, distinct: collector.distinct, deliveries: collector.total)
        row.notes.append(note)
        row.check(collector.idsByCustomer.values.allSatisfy { $0.count == 1 }, "a customer got two different alert ids")
        await collector.close()
        return row
    }

    /// `Cluster.customers` customers with the prefix, each subscribed to `sku` through node `node`, once `store` holds
    /// their watches.
    func watchers(_ prefix: String, of sku: String, via node: Int, store: StoreProcess) async throws -> [String] {
        let ids = Requests.customers(Cluster.customers, prefix: prefix)
        try await Requests.publish(Requests.subscriptions(ids, to: sku), to: cluster.nodes[node].url, protocolVersion: .v311)
        try await StoreQueues.waitForWatches(ids.count, in: store.dataDirectory, within: 120)
        return ids
    }

    /// Every node as a broker list, from node `first` on.
    func settings(startingAt first: Int) throws -> BrokerSettings {
        try BrokerSettings(url: cluster.brokerList(startingAt: first), protocolVersion: .v311)
    }

    /// A store process on the list starting at node 0 (its own data directory unless given), not started.
    func store(dataDirectory: URL? = nil, extraArguments: [String] = []) throws -> StoreProcess {
        try StoreProcess(
            brokerList: cluster.brokerList(), statusBroker: try settings(startingAt: 1), dataDirectory: dataDirectory,
            extraArguments: ["--mqtt-version", "3.1.1"] + extraArguments)
    }

    /// Sets `sku`'s stock to 5 as the admin, through the list from node `node` on, once the store confirms.
    func restock(_ sku: String, via node: Int) async throws {
        let client = StoreClient(connection: try settings(startingAt: node), topics: try RestockTopics(store: StoreID("apple")))
        _ = try await Self.throughElections("the store to confirm the restock of \(sku)") {
            try await client.changeStock(of: try SKU(sku), .set(5), wait: 20)
        }
    }

    /// The admin's report, asked through the list from node `node` on: whether the store answers within `seconds`
    /// (found by the issue 25 trial: after a failover the store's subscription to the admin's questions could be
    /// refused by a node electing leaders, and never made again).
    func reportAnswered(via node: Int, within seconds: Double) async -> Bool {
        guard let settings = try? settings(startingAt: node), let topics = try? RestockTopics(store: StoreID("apple")) else { return false }
        let client = StoreClient(connection: settings, topics: topics)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if (try? await client.report(wait: 10)) != nil { return true }
        }
        return false
    }

    /// Every alert of the store, by one persistent subscriber on the list from node `node` on (only that node when
    /// `alone`).
    func collector(startingAt node: Int, clientID: String = "collector-\(UUID().uuidString.prefix(6))", alone: Bool = false) async throws -> AlertCollector {
        // A node closes new connections, and refuses subscriptions, for seconds after another one dies (an election).
        try await Self.throughElections("a node to take the collector") {
            try await AlertCollector(
                url: alone ? cluster.nodes[node].url : cluster.brokerList(startingAt: node), filter: "restock/apple/customers/+/alerts",
                clientID: clientID, protocolVersion: .v311)
        }
    }

    /// Runs `operation` until it succeeds, within a minute: for seconds after a node dies, the cluster closes new
    /// connections, refuses subscriptions, and may answer a subscription without the retained message it holds (a
    /// command then says the store was never online).
    static func throughElections<T: Sendable>(_ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let result = Mutex<T?>(nil)
        try await waitUntil(what, within: 60, pollEvery: .milliseconds(250)) {
            guard let value = try? await operation() else { return false }
            result.withLock { $0 = value }
            return true
        }
        guard let value = result.withLock({ $0 }) else { throw CancellationError() }  // set whenever the wait succeeds
        return value
    }

    /// The seconds from `start` to now.
    static func seconds(since start: ContinuousClock.Instant) -> Double { (ContinuousClock.now - start).seconds }

    /// Waits for a line of the store's log, after `after` characters of it, that says it reconnected to a broker other
    /// than `lost`; returns that broker.
    static func reconnection(of store: StoreProcess, after offset: Int, leaving lost: String, within seconds: Double) async throws -> String {
        @Sendable func line() -> Substring? {
            store.log.dropFirst(offset).split(separator: "\n").first { $0.contains("reconnected to the broker") && !$0.contains("broker=\(lost)") }
        }
        try await waitUntil("the store to reconnect to another node", within: seconds, pollEvery: .milliseconds(50)) { line() != nil }
        return line()?.components(separatedBy: "broker=").last?.split(separator: " ").first.map(String.init) ?? "?"
    }
}
