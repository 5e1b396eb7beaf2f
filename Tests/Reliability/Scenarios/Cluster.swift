import Deadlines
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport

/// `make cluster-test`: the store on a 3-node NATS cluster that loses nodes (issue 25; docs/reliability.md, "On a
/// cluster"). Each scenario has a cluster of its own.
enum Cluster {
    static let customers = 300

    /// C1: the store's node SIGKILLed in the middle of a fan-out and left down: the store moves to another node, and
    /// every alert arrives.
    static func storeNodeKilled() async throws -> ScenarioRow {
        try await ClusterRig.run { rig in
            let store = try await rig.startedStore()
            _ = try await rig.watchers("c1-", of: "c1-sku", via: 1, store: store)
            let collector = try await rig.collector(startingAt: 2)
            // The inventory's confirmation follows the alerts out of the outbox: the kill comes at the first alert instead.
            let restock = Task { try await rig.restock("c1-sku", via: 1) }
            try await waitUntil("the fan-out to begin", within: 60, pollEvery: .milliseconds(2)) { collector.total > 0 }
            let atKill = collector.distinct, offset = store.log.count
            try await rig.cluster.kill(0)
            let killed = ContinuousClock.now
            let broker = try await ClusterRig.reconnection(of: store, after: offset, leaving: rig.cluster.nodes[0].url, within: 90)
            let failover = ClusterRig.seconds(since: killed)
            try? await waitUntil("every alert", within: 120) { collector.distinct >= customers }
            let allIn = ClusterRig.seconds(since: killed)
            _ = await restock.result

            var row = await ClusterRig.row(
                "C1", "the store's node SIGKILLed mid fan-out of 300 alerts and left down", collector,
                note: "\(atKill) alerts in at the kill; the store's session on \(broker) \(String(format: "%.1f", failover)) s after it, every alert in after \(String(format: "%.1f", allIn)) s")
            row.check(store.exitStatus == nil, "the store stopped")
            row.check(await rig.reportAnswered(via: 1, within: 60), "the store answered no report after the failover")
            try await store.send(SIGTERM)
            return row
        }
    }

    /// C2: the node of a customer who is away is SIGKILLed, and the alerts are raised meanwhile: back on another node,
    /// the customer's session and every queued alert are there.
    static func customerNodeKilled() async throws -> ScenarioRow {
        try await ClusterRig.run { rig in
            let store = try await rig.startedStore()
            _ = try await rig.watchers("c2-", of: "c2-sku", via: 1, store: store)
            let away = try await rig.collector(startingAt: 2, clientID: "c2-listener", alone: true)
            await away.close()
            try await rig.cluster.kill(2)
            let killed = ContinuousClock.now
            try await rig.restock("c2-sku", via: 0)
            try await StoreQueues.waitUntilDrained(store.dataDirectory, within: 120)
            // Back through the list from its own node, which is dead: the next one answers.
            let back = try await rig.collector(startingAt: 2, clientID: "c2-listener")
            try? await waitUntil("every queued alert", within: 120) { back.distinct >= customers }

            let on = back.client.currentBroker.description
            var row = await ClusterRig.row(
                "C2", "a customer away; their node SIGKILLed; 300 alerts raised; the customer back on another node", back,
                note: "back on \(on); every alert in \(String(format: "%.1f", ClusterRig.seconds(since: killed))) s after the kill")
            row.check(on != rig.cluster.nodes[2].url, "the customer came back on the dead node")
            try await store.send(SIGTERM)
            return row
        }
    }

    /// C3: with one node down, the live store SIGKILLed mid fan-out: the standby on its data directory takes over and
    /// every alert arrives.
    static func standbyWithNodeDown() async throws -> ScenarioRow {
        try await ClusterRig.run { rig in
            let live = try await rig.startedStore()
            let standby = try rig.store(dataDirectory: live.dataDirectory, extraArguments: ["--standby"])
            try standby.launch()
            try await waitUntil("the standby to wait", within: 30) { standby.log.contains("standby for store") }
            _ = try await rig.watchers("c3-", of: "c3-sku", via: 0, store: live)
            try await rig.cluster.kill(1)
            let collector = try await rig.collector(startingAt: 2)
            let restock = Task { try await rig.restock("c3-sku", via: 0) }
            try await waitUntil("the fan-out to begin", within: 60, pollEvery: .milliseconds(2)) { collector.total > 0 }
            try await live.send(SIGKILL)
            let killed = ContinuousClock.now
            // Its own online line: the retained status may still be the dead store's, its heartbeat fresh for a few seconds.
            try await waitUntil("the standby online", within: 90) { standby.log.contains("store apple online") }
            let takeover = ClusterRig.seconds(since: killed)
            try? await waitUntil("every alert", within: 120) { collector.distinct >= customers }
            _ = await restock.result

            let row = await ClusterRig.row(
                "C3", "one node SIGKILLed; then the live store SIGKILLed mid fan-out of 300 alerts; the standby on its data directory",
                collector, note: "the standby online \(String(format: "%.1f", takeover)) s after the kill")
            try await standby.send(SIGTERM)
            return row
        }
    }

    /// C4: a node SIGKILLed and started again rejoins: it serves the store's retained state, takes requests and
    /// delivers alerts, with only itself as the broker of the clients.
    static func nodeRejoins() async throws -> ScenarioRow {
        try await ClusterRig.run { rig in
            let store = try await rig.startedStore()
            try await rig.cluster.kill(2)
            let killed = ContinuousClock.now
            try await rig.cluster.restart(2)
            let healthy = ClusterRig.seconds(since: killed)
            let alone = StoreClient(
                connection: try BrokerSettings(url: rig.cluster.nodes[2].url, protocolVersion: .v311), topics: try RestockTopics(store: StoreID("apple")))
            try await waitUntil("the restarted node to serve the store's status", within: 90) {
                (try? await alone.status())?.isOnline == true
            }
            let serving = ClusterRig.seconds(since: killed)
            let collector = try await rig.collector(startingAt: 2, alone: true)
            _ = try await rig.watchers("c4-", of: "c4-sku", via: 2, store: store)
            try await alone.changeStock(of: try SKU("c4-sku"), .set(5), wait: 60)
            try? await waitUntil("every alert", within: 120) { collector.distinct >= customers }

            let row = await ClusterRig.row(
                "C4", "a node SIGKILLed and restarted; 300 subscribes, a restock and the alerts through it alone", collector,
                note: "healthy again \(String(format: "%.1f", healthy)) s after the kill; serving the store's online status after \(String(format: "%.1f", serving)) s")
            try await store.send(SIGTERM)
            return row
        }
    }
}
