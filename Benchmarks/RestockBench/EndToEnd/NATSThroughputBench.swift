import Deadlines
import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport

/// B6: a restock that alerts `customers` customers through a 3-node NATS cluster's MQTT listener (the store given all
/// three nodes, `make cluster-test`'s configuration), next to the same through one mosquitto (B3's broker), in the
/// same run and measured the same way: MQTT 3.1.1 (NATS speaks nothing newer), from the stock command to the last
/// distinct alert at one wildcard subscriber. The store starts seeded with the customers' `every` watches, and each
/// customer has a persistent session that keeps their alerts while they are away.
struct NATSThroughputBench {
    let runs: Int
    var customers = 2_000

    func run(say: (String) -> Void) async throws -> (nats: Samples, mosquitto: Samples) {
        let cluster = try await NATSCluster.start(nodes: 3)
        defer { Task { await cluster.stop() } }
        let nats = try await measure(on: cluster.brokerList(), readingFrom: cluster.nodes[1].url, say: say, name: "NATS")
        await cluster.stop()
        let broker = try await BenchBroker.start()
        let mosquitto = try await measure(on: broker.url, readingFrom: broker.url, say: say, name: "mosquitto")
        try await broker.stop()
        return (nats, mosquitto)
    }

    /// `runs` restocks of a store on `list`, the alerts read through `reader`; alerts per second, one per run.
    private func measure(on list: String, readingFrom reader: String, say: (String) -> Void, name: String) async throws -> Samples {
        let sku = "b6"
        let data = try SeededStore.directory(watches: customers, of: sku, mode: .every, customerPrefix: "n")
        defer { try? FileManager.default.removeItem(at: data) }
        let store = try StoreProcess(
            brokerList: list, statusBroker: try BrokerSettings(url: reader, protocolVersion: .v311), dataDirectory: data,
            extraArguments: ["--mqtt-version", "3.1.1"])
        try await store.start()
        try await makeSessions(on: reader)
        let alerts = try await AlertCollector(
            url: reader, filter: "restock/apple/customers/+/alerts", clientID: "b6-\(UUID().uuidString.prefix(6))", protocolVersion: .v311)
        var rate = Samples()
        for run in 1...runs {
            let before = alerts.distinct
            let start = nanoseconds()
            try await stock(1, of: sku, via: reader)
            try await waitUntil("\(customers) alerts through \(name)", within: 600, pollEvery: .milliseconds(5)) {
                alerts.distinct >= before + customers
            }
            rate.append(Double(customers) / seconds(since: start))
            say("  B6 \(name) run \(run): \(Figure.format(rate.values.last!)) alerts/s")
            try await stock(0, of: sku, via: reader)
            try await StoreQueues.waitUntilDrained(data, within: 300)
        }
        await alerts.close()
        try await store.send(SIGTERM)
        return rate
    }

    /// Every customer's persistent listening session, subscribed to its alerts at QoS 1 and then away, as `restock
    /// subscribe` leaves it: the broker keeps each alert for its customer (on NATS, a JetStream consumer per session).
    private func makeSessions(on url: String) async throws {
        let address = try BrokerAddress(url: url)
        let store = try StoreID("apple")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for start in stride(from: 0, to: customers, by: customers / 20) {
                group.addTask {
                    for index in start..<min(start + customers / 20, customers) {
                        let customer = try CustomerID("n\(index)")
                        let session = try MQTTClient(
                            configuration: .init(
                                broker: address, clientID: SessionClientIDs.listening(customer, at: store), session: .persistent,
                                protocolVersion: .v311))
                        try await session.connect()
                        try await session.subscribe(to: "restock/apple/customers/\(customer)/alerts", qos: .atLeastOnce)
                        await session.disconnect()
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func stock(_ quantity: Int, of sku: String, via url: String) async throws {
        let request = (topic: "restock/apple/admin/stock", payload: Array(#"{"sku":"\#(sku)","set":\#(quantity)}"#.utf8))
        try await Requests.publish([request], to: url, protocolVersion: .v311)
    }

    /// The section: both brokers' rates and their ratio.
    static func section(_ result: (nats: Samples, mosquitto: Samples), customers: Int, runs: Int) -> BenchSection {
        var section = BenchSection(
            id: "B6", title: "B6 A restock through a NATS cluster, next to mosquitto",
            method: """
                A store seeded with \(Figure.grouped(customers)) customers' `every` watches restocks one SKU, each customer \
                having a persistent session subscribed to their alerts at QoS 1 and away (the broker keeps every alert for \
                them); timed from the stock command to the last of the \(Figure.grouped(customers)) alerts at one wildcard \
                subscriber, all at MQTT 3.1.1: first on a 3-node NATS cluster (nats-server 2.15, the store given every node, JetStream with \
                `stream_replicas: 3`), then on one mosquitto, in the same run. \(runs) runs each.
                """)
        section.table = MarkdownTable(header: ["customers", "NATS, alerts/s", "mosquitto, alerts/s", "NATS ÷ mosquitto"])
        section.table.add([
            Figure.grouped(customers), result.nats.formatted(), result.mosquitto.formatted(), result.nats.ratio(to: result.mosquitto).formatted(),
        ])
        return section
    }
}
