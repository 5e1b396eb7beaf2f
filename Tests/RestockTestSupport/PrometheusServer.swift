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

    deinit {
        process.send(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Its log (standard output and error).
    public var log: String { process.output }

    /// Starts it scraping `targets` (`127.0.0.1:PORT`) at `/metrics`, and waits until it is ready.
    public static func start(scraping targets: [String]) async throws -> PrometheusServer {
        let directory = try temporaryDirectory("prometheus")
        let configuration = directory.appendingPathComponent("prometheus.yml")
        let list = targets.map { "'\($0)'" }.joined(separator: ", ")
        try Data(
            """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: restock
                static_configs:
                  - targets: [\(list)]
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
        var components = URLComponents(string: "\(url)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        let answer = try await httpGet(components.url!.absoluteString)
        guard answer.status == 200,
            let json = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { throw PrometheusExited(log: "the query \(expression) was answered \(answer.status): \(answer.body)") }
        guard let value = result.first?["value"] as? [Any], value.count == 2, let text = value[1] as? String else { return nil }
        return Double(text)
    }
}

/// Prometheus stopped, or answered what it should not.
public struct PrometheusExited: Error, CustomStringConvertible {
    /// What it printed, or what it answered.
    public let log: String
    public var description: String { "Prometheus: \(log.suffix(2000))" }
}
