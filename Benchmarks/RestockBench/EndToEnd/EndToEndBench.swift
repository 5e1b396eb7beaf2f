import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport

/// B3: a restock that alerts N customers through mosquitto at QoS 1, from the stock command to the last
/// alert at a wildcard `mosquitto_sub`, next to two anchors carrying as many messages of the same size through
/// the same broker, in the same run: the C ceiling (``CeilingProgram``) and `mosquitto_pub -l` → `mosquitto_sub`.
struct EndToEndBench {
    static let customerCounts = [1_000, 100_000]
    /// mosquitto_pub -l stops early past 65,535 messages: larger counts go in several C runs.
    static let cRunLimit = 50_000
    let runs: Int
    var customerCounts = Self.customerCounts

    struct Row {
        let customers: Int
        var store = Samples()
        /// Milliseconds from the stock command to the first alert.
        var firstAlert = Samples()
        var tools = Samples()
        /// The C ceiling's messages/s (it fails the run unless every message arrives once).
        var ceiling = Samples()
        var lost = 0
        var duplicates = 0
        var toolsLost = 0
    }

    /// The rows, the store's state in `postgres`' database when given (then without the anchors: its rows are compared
    /// with SQLite's of the same run).
    func run(say: (String) -> Void, postgres: PrivatePostgres? = nil) async throws -> [Row] {
        var rows: [Row] = []
        for count in customerCounts {
            rows.append(try await measure(customers: count, postgres: postgres, say: say))
        }
        return rows
    }

    /// The rows on a private PostgreSQL server of their own.
    func runOnPostgres(say: (String) -> Void) async throws -> [Row] {
        try await PrivatePostgres.with { server in try await run(say: say, postgres: server) }
    }

    private func measure(customers count: Int, postgres: PrivatePostgres?, say: (String) -> Void) async throws -> Row {
        let broker = try await BenchBroker.start()
        let sku = "bench-\(count)"
        let state = try await BenchState.seeded(watches: count, of: sku, mode: .every, customerPrefix: "b", on: postgres)
        defer { state.remove() }
        let store = try state.store(on: broker)
        try await store.start()

        let alerts = try await Subscriber(
            broker: broker, filter: "restock/apple/customers/+/alerts", probeTopic: "restock/apple/customers/probe/alerts",
            identify: ArrivalLog.alertID)
        let tools = try await Subscriber(broker: broker, filter: "bench/+/alerts", probeTopic: "bench/probe/alerts") { line in
            String(decoding: line.prefix(16), as: UTF8.self)
        }
        let admin = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "bench-admin"))
        try await admin.connect()
        // A C message as long as an alert, so both carry the same bytes.
        let alertSize = Self.alertPayloadSize(store: "apple", customer: "b\(count - 1)", sku: sku, sequence: UInt64(count * runs))

        var row = Row(customers: count)
        var cSent = 0, cChecks = 0
        for run in 1...runs {
            // The store: set 1 raises one alert per customer.
            let before = alerts.log.distinct
            let start = nanoseconds()
            try await admin.publish(Array(#"{"sku":"\#(sku)","set":1}"#.utf8), to: "restock/apple/admin/stock", qos: .atLeastOnce)
            let last = try await alerts.log.waitForDistinct(before + count, within: 600, what: "\(count) alerts")
            row.store.append(Double(count) / (Double(last - start) / 1e9))
            row.firstAlert.append(Double((alerts.log.arrival(before + 1) ?? last) - start) / 1e6)
            try await admin.publish(Array(#"{"sku":"\#(sku)","set":0}"#.utf8), to: "restock/apple/admin/stock", qos: .atLeastOnce)
            try await state.waitUntilDrained(within: 120)
            guard postgres == nil else {
                say("  B3 on PostgreSQL N=\(Figure.grouped(count)) run \(run): store \(Figure.format(row.store.values.last!)) alerts/s (first after \(Figure.format(row.firstAlert.values.last!)) ms)")
                continue
            }

            // The C tools: as many messages, in runs of at most 50,000.
            var elapsed: UInt64 = 0
            var remaining = count
            while remaining > 0 {
                let batch = min(remaining, Self.cRunLimit)
                elapsed += try await publishWithTools(batch, size: alertSize, from: cSent, broker: broker, to: tools.log)
                cSent += batch
                cChecks += 1
                remaining -= batch
            }
            row.tools.append(Double(count) / (Double(elapsed) / 1e9))

            // The C ceiling: as many messages, in one run.
            row.ceiling.append(try await CeilingProgram.rate(count, size: alertSize, broker: broker))
            say("  B3 N=\(Figure.grouped(count)) run \(run): store \(Figure.format(row.store.values.last!)) alerts/s (first after \(Figure.format(row.firstAlert.values.last!)) ms) · C ceiling \(Figure.format(row.ceiling.values.last!)) · mosquitto_pub -l → mosquitto_sub \(Figure.format(row.tools.values.last!)) messages/s")
        }
        // Nothing more may arrive, and nothing may be missing.
        try await state.waitUntilDrained(within: 120)
        row.lost = count * runs - alerts.log.distinct
        row.duplicates = alerts.log.deliveries - alerts.log.distinct
        row.toolsLost = cSent + cChecks - tools.log.distinct
        await admin.disconnect()
        try await store.send(SIGTERM)
        try await broker.stop()
        return row
    }

    /// Starts `mosquitto_pub -l`, waits until it is connected (its first line arrives), then times `count`
    /// more lines from the moment they are written to the moment the last reaches `mosquitto_sub`.
    private func publishWithTools(_ count: Int, size: Int, from first: Int, broker: MosquittoBroker, to log: ArrivalLog) async throws -> UInt64 {
        let publisher = try PipedProcess(
            "mosquitto_pub", ["-h", "127.0.0.1", "-p", String(broker.port), "-V", "5", "-q", "1", "-t", "bench/c/alerts", "-l"])
        defer { publisher.stop() }
        let before = log.distinct
        publisher.write(line: Self.toolsLine(first, size: size, prefix: "k"))  // the connection check, not timed
        _ = try await log.waitForDistinct(before + 1, within: 30, what: "mosquitto_pub to connect")
        var lines = Data()
        for index in first..<(first + count) { lines.append(Data((Self.toolsLine(index, size: size) + "\n").utf8)) }
        let start = nanoseconds()
        publisher.write(lines)
        let last = try await log.waitForDistinct(before + 1 + count, within: 600, what: "\(count) messages from mosquitto_pub")
        publisher.closeInput()
        try await publisher.waitForExit(within: 30)
        return last - start
    }

    /// Message `index` of the C run: a 16-character id, padded to `size` bytes.
    private static func toolsLine(_ index: Int, size: Int, prefix: String = "m") -> String {
        let id = prefix + String(repeating: "0", count: max(0, 15 - String(index).count)) + String(index)
        return id + String(repeating: "x", count: max(0, size - id.count))
    }

    /// The size of a real alert's JSON.
    private static func alertPayloadSize(store: String, customer: String, sku: String, sequence: UInt64) -> Int {
        let alert = RestockAlert(
            id: "\(store)-\(sequence)", store: try! StoreID(store), customer: try! CustomerID(customer), sku: try! SKU(sku),
            quantity: 1, position: sequence, message: "Good news, \(customer): \(sku) is back in stock at \(store) (1 available).",
            at: Date())
        return alert.jsonData().count
    }
}
