import Deadlines
import Foundation
import LocalBroker

/// A real Prometheus (Debian's `prometheus`) on a free loopback port, scraping `targets` every second, with its storage in
/// a directory of its own; killed, and the directory removed, when released.
public final class PrometheusServer: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let url: String
    private let directory: URL
    private let process: ChildProcess

    private init(url: String, directory: URL, process: ChildProcess) {
        self.url = url
        self.directory = directory
        self.process = process
    }

    deinit { stop() }

    /// Kills it and removes its directory (also done when it is released; a process that ends with `exit` releases nothing).
    public func stop() {
        process.send(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Its log (standard output and error).
    public var log: String { process.output }

    /// Starts it scraping `targets` (`127.0.0.1:PORT`) at `/metrics`, and waits until it is ready.
    public static func start(scraping targets: [String]) async throws -> PrometheusServer {
        let list = targets.map { "'\($0)'" }.joined(separator: ", ")
        return try await start(scrapeConfiguration: { _ in "static_configs:\n      - targets: [\(list)]" })
    }

    /// Starts it scraping the targets listed in `targetsFile` (Prometheus's file service discovery: a JSON list of
    /// `{"targets": […], "labels": {…}}`, read again whenever it changes), and waits until it is ready.
    /// - Parameter interval: How often it scrapes each (stores that live a few seconds want it often).
    public static func start(scrapingTargetsIn targetsFile: URL, every interval: String = "1s") async throws -> PrometheusServer {
        try await start(interval: interval, scrapeConfiguration: { _ in "file_sd_configs:\n      - files: ['\(targetsFile.path)']" })
    }

    private static func start(interval: String = "1s", scrapeConfiguration: (URL) -> String) async throws -> PrometheusServer {
        let directory = try temporaryDirectory("prometheus")
        let configuration = directory.appendingPathComponent("prometheus.yml")
        try Data(
            """
            global:
              scrape_interval: \(interval)
              evaluation_interval: 1s
            scrape_configs:
              - job_name: restock
                \(scrapeConfiguration(directory))
            """.utf8
        ).write(to: configuration)
        // The kernel's free port can be taken again before Prometheus binds it; then try another.
        var attempt = 0
        while true {
            attempt += 1
            let port = try freeLoopbackPort()
            let process = try ChildProcess(
                "prometheus",
                [
                    "--config.file=\(configuration.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
                    "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
                ], outputFile: directory.appendingPathComponent("prometheus.log"))
            let server = PrometheusServer(url: "http://127.0.0.1:\(port)", directory: directory, process: process)
            do {
                try await waitUntil("Prometheus to be ready", within: 60, pollEvery: .milliseconds(100)) {
                    if !process.isRunning { throw PrometheusExited(log: server.log) }
                    return (try? await httpGet("\(server.url)/-/ready"))?.status == 200
                }
                return server
            } catch let exited as PrometheusExited where attempt < 3 && exited.log.contains("address already in use") {
                continue
            }
        }
    }

    /// The value of the first series `expression` (PromQL) selects now, through the HTTP API; `nil` when it selects none.
    public func query(_ expression: String) async throws -> Double? {
        try await series(expression).first?.value
    }

    /// The value of each series `expression` selects now, by the value of its label `label` ("" when it has none).
    public func query(_ expression: String, byLabel label: String) async throws -> [String: Double] {
        Dictionary(try await series(expression).map { ($0.labels[label] ?? "", $0.value) }) { first, _ in first }
    }

    private func series(_ expression: String) async throws -> [(labels: [String: String], value: Double)] {
        var components = URLComponents(string: "\(url)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        let answer = try await httpGet(components.url!.absoluteString)
        guard answer.status == 200,
            let json = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { throw PrometheusExited(log: "the query \(expression) was answered \(answer.status): \(answer.body)") }
        return result.compactMap { series in
            guard let value = series["value"] as? [Any], value.count == 2, let text = value[1] as? String, let number = Double(text)
            else { return nil }
            return (series["metric"] as? [String: String] ?? [:], number)
        }
    }
}

/// Prometheus stopped, or answered what it should not.
public struct PrometheusExited: Error, CustomStringConvertible {
    /// What it printed, or what it answered.
    public let log: String
    public var description: String { "Prometheus: \(log.suffix(2000))" }
}
