import Deadlines
import Foundation
import LocalBroker
import RestockMQTT
import RestockTestSupport
import Testing

/// `restock serve --http` (docs/operations.md, "Health and metrics"): `/livez`, `/readyz` and `/metrics` of a real store
/// on a real mosquitto, scraped by a real Prometheus and checked by promtool. One test at a time: each starts a broker,
/// one or two stores and perhaps Prometheus, and the rest of the suite runs beside them on two cores.
@Suite("Health and metrics over HTTP", .serialized, .timeLimit(.minutes(3)))
struct HealthAndMetricsTests {
    /// A store serving its HTTP endpoint on a port the system picks, and that endpoint's address.
    func store(on broker: MosquittoBroker, environment: [String: String] = [:]) async throws -> (StoreProcess, String) {
        let store = try StoreProcess(broker: broker, extraArguments: ["--http", "127.0.0.1:0"])
        try await store.start(extraEnvironment: environment)
        return (store, try await store.httpURL())
    }

    /// Waits until `path` answers `status`; returns the body.
    @discardableResult
    func waitFor(_ status: Int, at url: String, _ path: String, within seconds: Double = 30) async throws -> String {
        try await waitUntil("\(path) to answer \(status)", within: seconds, pollEvery: .milliseconds(50)) {
            (try? await httpGet(url + path))?.status == status
        }
        return try await httpGet(url + path).body
    }

    @Test("a real Prometheus scrapes the store every second and sees requests applied and the alert counter rise")
    func prometheusScrapesTheStore() async throws {
        let broker = try await MosquittoBroker.start()
        let (store, url) = try await store(on: broker)
        let prometheus = try await PrometheusServer.start(scraping: [String(url.dropFirst("http://".count))])
        try await waitUntil("Prometheus to scrape the store", within: 60, pollEvery: .milliseconds(200)) {
            try await prometheus.query(#"up{job="restock"}"#) == 1
        }
        #expect(try await prometheus.query("restock_alerts_raised_total") == 0)

        try await Requests.publish(Requests.subscriptions(Requests.customers(3, prefix: "m"), to: "ipad"), to: broker.url)
        try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"ipad","set":5}"#)
        try await waitUntil("Prometheus to see 3 alerts raised", within: 60, pollEvery: .milliseconds(200)) {
            try await prometheus.query("restock_alerts_raised_total") == 3
        }
        try await waitUntil("Prometheus to see them acknowledged", within: 60, pollEvery: .milliseconds(200)) {
            try await prometheus.query("restock_alerts_acknowledged_total") == 3
        }
        #expect(try await prometheus.query(#"restock_requests_applied_total{kind="subscribe"}"#) == 3)
        #expect(try await prometheus.query(#"restock_requests_applied_total{kind="stock"}"#) == 1)
        #expect(try await prometheus.query("restock_requests_journaled_total") == 4)
        #expect(try await prometheus.query(#"restock_broker_connected{connection="session"}"#) == 1)
        // Where the state is, and the lease held there (issue 34).
        #expect(try await prometheus.query(#"restock_storage_info{engine="sqlite"}"#) == 1)
        #expect(try await prometheus.query("restock_lease_epoch") == 1)
        #expect(try await prometheus.query("restock_lease_age_seconds") ?? 99 < 5)
        let ready = try await httpGet(url + "/readyz").body
        #expect(ready.contains("; state in \(store.dataDirectory.path), lease epoch 1 renewed "), "\(ready)")
        #expect(store.exitStatus == nil)
    }

    @Test("/metrics names every metric, counts a refusal by its code, and passes promtool check metrics")
    func metricsPassPromtool() async throws {
        let broker = try await MosquittoBroker.start()
        let (store, url) = try await store(on: broker)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "not a sku!")
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "ipad")
        try await waitUntil("the refusal to be counted", within: 30) {
            let metrics = try await httpGet(url + "/metrics").body
            return metrics.contains(#"restock_requests_refused_total{code="invalid-sku"} 1"#) && metrics.contains("restock_watches 1")
        }
        let metrics = try await httpGet(url + "/metrics")
        #expect(metrics.status == 200)
        for metric in StoreMetric.all {
            #expect(metrics.body.contains("# TYPE \(metric.name) \(metric.kind.rawValue)"), "\(metric.name) missing")
            #expect(metrics.body.contains("# HELP \(metric.name) "), "\(metric.name) has no help line")
        }
        #expect(metrics.body.contains("restock_customers 1"))
        let lint = try await ChildProcess.run("promtool", ["check", "metrics"], input: Data(metrics.body.utf8), within: 30)
        #expect(lint.status == 0, "promtool: \(lint.standardOutput) \(lint.standardError)")
        // promtool's lint does fail on what it should: a counter without _total.
        let bad = try await ChildProcess.run(
            "promtool", ["check", "metrics"], input: Data("# HELP restock_x X.\n# TYPE restock_x counter\nrestock_x 1\n".utf8), within: 30)
        #expect(bad.status != 0)
        #expect(try await httpGet(url + "/livez").status == 200)
        #expect(try await httpGet(url + "/nothing").status == 404)
        // A probe by HEAD (`curl -I`) is answered as GET is, without the body (it was 404: found by an outside trial).
        for path in ["/livez", "/readyz"] {
            let head = try await httpGet(url + path, method: "HEAD")
            #expect(head.status == 200 && head.body.isEmpty, "\(path): \(head)")
        }
        #expect(store.exitStatus == nil)
    }

    @Test("/readyz follows the broker: 503 with the reason while it is away, 200 once the store is back; /livez stays 200")
    func readinessFollowsTheBroker() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let (store, url) = try await store(on: broker)
        try await waitFor(200, at: url, "/readyz")
        try await broker.stop()
        let reason = try await waitFor(503, at: url, "/readyz")
        #expect(reason.contains("session with the broker is down"), "\(reason)")
        #expect(try await httpGet(url + "/livez").status == 200)
        try await broker.launch()
        try await waitFor(200, at: url, "/readyz", within: 60)
        let metrics = try await httpGet(url + "/metrics").body
        #expect(metrics.contains(#"restock_broker_reconnects_total{connection="session"} 1"#), "\(metrics)")
        #expect(store.exitStatus == nil)
    }

    @Test("/readyz says 503 while a full disk pauses the store, with the reason, and 200 once it can write again")
    func readinessFollowsAFullDisk() async throws {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let flag = FileManager.default.temporaryDirectory.appendingPathComponent("disk-full-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: flag) }
        let (store, url) = try await store(on: broker, environment: ["RESTOCK_FAULT": "disk-full-while:\(flag.path)"])
        try await waitFor(200, at: url, "/readyz")
        try Data().write(to: flag)
        try await mosquittoPub(broker, "restock/apple/subscribe/alice", "ipad")
        let reason = try await waitFor(503, at: url, "/readyz")
        #expect(reason.contains("paused") && reason.contains("the disk is full"), "\(reason)")
        #expect(try await httpGet(url + "/livez").status == 200)
        try FileManager.default.removeItem(at: flag)
        try await waitFor(200, at: url, "/readyz", within: 60)
        let metrics = try await httpGet(url + "/metrics").body
        let paused = metrics.firstMatch(of: /restock_paused_seconds_total\{stage="journal"\} ([0-9.e+-]+)/).flatMap { Double($0.1) }
        #expect((paused ?? 0) > 0, "\(metrics)")
        #expect(store.exitStatus == nil)
    }

    @Test("a standby is alive and not ready; a taken port or a bad --http value is refused in one line")
    func standbyAndBadValues() async throws {
        let broker = try await MosquittoBroker.start()
        let (live, url) = try await store(on: broker)
        let standby = try StoreProcess(broker: broker, dataDirectory: live.dataDirectory, extraArguments: ["--http", "127.0.0.1:0", "--standby"])
        try standby.launch()
        let standbyURL = try await standby.httpURL()
        let reason = try await waitFor(503, at: standbyURL, "/readyz")
        #expect(reason.hasPrefix("standby"), "\(reason)")
        #expect(try await httpGet(standbyURL + "/livez").status == 200)
        // The live store's port is taken: a second process cannot listen there, and says so in one line.
        let port = try #require(url.split(separator: ":").last)
        let pear = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: pear) }
        let pearData = pear.appendingPathComponent("data")
        let taken = try await ChildProcess.run(
            restockExecutable, ["serve", "--broker", broker.url, "--store", "pear", "--data", pearData.path, "--http", "127.0.0.1:\(port)"], within: 30)
        #expect(taken.status != 0)
        #expect(taken.standardError.contains("error: cannot serve HTTP on 127.0.0.1:\(port): Address already in use;"), "\(taken.standardError)")
        // Refused before anything is made (it made the whole data directory first: found by an outside trial).
        #expect(!FileManager.default.fileExists(atPath: pearData.path), "serve made \(pearData.path) before it refused the port")
        for bad in ["9090", "127.0.0.1:", "127.0.0.1:70000", "http://127.0.0.1:9090", "a b:1"] {
            let refused = try await ChildProcess.run(restockExecutable, ["serve", "--http", bad], within: 30)
            #expect(refused.status != 0)
            #expect(refused.standardError.split(separator: "\n").first?.contains("--http must be HOST:PORT") == true, "\(refused.standardError)")
        }
    }

    @Test("deploy/prometheus/alerts.yml passes promtool check rules and its unit tests, and names only metrics the store reports, each documented")
    func alertRules() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let rules = root.appendingPathComponent("deploy/prometheus/alerts.yml")
        let check = try await ChildProcess.run("promtool", ["check", "rules", rules.path], within: 30)
        #expect(check.status == 0, "promtool: \(check.standardOutput) \(check.standardError)")
        // The rules' own unit tests: each alert fires when it should, and not before.
        let unit = try await ChildProcess.run("promtool", ["test", "rules", rules.deletingPathExtension().path + ".test.yml"], within: 30)
        #expect(unit.status == 0, "promtool: \(unit.standardOutput) \(unit.standardError)")
        let names = Set(StoreMetric.all.map(\.name))
        let text = try String(contentsOf: rules, encoding: .utf8)
        let used = Set(text.matches(of: /restock_[a-z_]+/).map { String($0.0) }.map { $0.replacing(/_bucket$/, with: "") })
        #expect(!used.isEmpty)
        #expect(used.subtracting(names).isEmpty, "alerts.yml names \(used.subtracting(names)), which the store does not report")
        let operations = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        for metric in StoreMetric.all {
            let label = metric.label.map { "{\($0)}" } ?? ""
            #expect(operations.contains("| `\(metric.name)\(label)` | \(metric.kind.rawValue) |"), "docs/operations.md has no row for \(metric.name)")
        }
    }
}
