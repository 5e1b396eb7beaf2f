import Deadlines
import Foundation
import LocalBroker
import Synchronization

/// A cluster of nats-server nodes with JetStream and an MQTT listener each, on free loopback ports, its configuration
/// made from deploy/nats/node.conf.template (`make cluster-test`; docs/operations.md, "Past one broker"). Each node
/// keeps its ports and its JetStream directory across a kill and a restart, as a machine that comes back does.
public final class NATSCluster: Sendable {
    /// One node: its name and ports.
    public struct Node: Sendable {
        public let name: String
        let clientPort: Int, monitorPort: Int, clusterPort: Int, mqttPort: Int
        /// Its MQTT listener.
        public var url: String { "mqtt://127.0.0.1:\(mqttPort)" }
    }

    /// The template, deploy/nats/node.conf.template.
    public static let template = Repository.root.appendingPathComponent("deploy/nats/node.conf.template")

    public let nodes: [Node]
    public let directory: URL
    private let processes: Mutex<[ChildProcess?]>

    /// The MQTT listeners, starting with node `first`, as a `--broker` list.
    public func brokerList(startingAt first: Int = 0) -> String {
        (0..<nodes.count).map { nodes[(first + $0) % nodes.count].url }.joined(separator: ",")
    }

    /// Starts `count` nodes and waits until each answers on /healthz (its JetStream is up and has a cluster).
    public static func start(nodes count: Int = 3) async throws -> NATSCluster {
        let nodes = try (1...count).map { index in
            Node(
                name: "n\(index)", clientPort: try freeLoopbackPort(), monitorPort: try freeLoopbackPort(),
                clusterPort: try freeLoopbackPort(), mqttPort: try freeLoopbackPort())
        }
        let cluster = try NATSCluster(nodes: nodes)
        for index in nodes.indices { try cluster.launch(index) }
        for index in nodes.indices { try await cluster.waitUntilHealthy(index) }
        return cluster
    }

    private init(nodes: [Node]) throws {
        self.nodes = nodes
        self.processes = Mutex(Array(repeating: nil, count: nodes.count))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let template = try String(contentsOf: Self.template, encoding: .utf8)
        for node in nodes {
            let routes = nodes.filter { $0.name != node.name }.map { "nats-route://127.0.0.1:\($0.clusterPort)" }
            let fields = [
                "NAME": node.name, "HOST": "127.0.0.1", "CLIENT_PORT": "\(node.clientPort)", "MONITOR_PORT": "\(node.monitorPort)",
                "CLUSTER_PORT": "\(node.clusterPort)", "MQTT_PORT": "\(node.mqttPort)", "ROUTES": routes.joined(separator: ", "),
                "STORE_DIR": directory.appendingPathComponent(node.name).path,
            ]
            let configuration = fields.reduce(template) { $0.replacingOccurrences(of: "{{\($1.key)}}", with: $1.value) }
            try configuration.write(to: configurationFile(node), atomically: true, encoding: .utf8)
        }
    }

    deinit {
        for process in processes.withLock({ $0 }) { process?.send(SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }

    private func configurationFile(_ node: Node) -> URL { directory.appendingPathComponent("\(node.name).conf") }
    private func logFile(_ node: Node) -> URL { directory.appendingPathComponent("\(node.name).log") }

    /// A node's log.
    public func log(_ index: Int) -> String { (try? String(contentsOf: logFile(nodes[index]), encoding: .utf8)) ?? "" }

    /// Whether node `index` runs.
    public func isRunning(_ index: Int) -> Bool { processes.withLock { $0[index]?.isRunning ?? false } }

    private func launch(_ index: Int) throws {
        let node = nodes[index]
        let executable = ProcessInfo.processInfo.environment["NATS_SERVER"] ?? "nats-server"
        let child = try ChildProcess(executable, ["-c", configurationFile(node).path], outputFile: logFile(node))
        processes.withLock { $0[index] = child }
    }

    /// Waits until node `index` says it is healthy (JetStream up) on its monitoring port.
    public func waitUntilHealthy(_ index: Int, within seconds: Double = 60) async throws {
        let node = nodes[index]
        try await waitUntil("nats node \(node.name) healthy", within: seconds, pollEvery: .milliseconds(100)) {
            if let status = self.processes.withLock({ $0[index]?.exitStatus }) {
                throw NATSNodeExited(name: node.name, status: status, log: String(self.log(index).suffix(800)))
            }
            return (try? await httpGet("http://127.0.0.1:\(node.monitorPort)/healthz", timeout: 2))?.status == 200
        }
    }

    /// SIGKILLs node `index`, as a machine's death does, and waits for it to be gone.
    public func kill(_ index: Int) async throws {
        guard let child = processes.withLock({ $0[index] }) else { return }
        child.send(SIGKILL)
        _ = try await child.waitForExit(within: 30)
    }

    /// Starts node `index` again, on its ports and JetStream directory, and waits until it is healthy.
    public func restart(_ index: Int) async throws {
        try launch(index)
        try await waitUntilHealthy(index)
    }

    /// Stops every node (SIGTERM, then SIGKILL after 10 s).
    public func stop() async {
        for child in processes.withLock({ $0 }).compactMap({ $0 }) where child.isRunning {
            child.send(SIGTERM)
            if (try? await child.waitForExit(within: 10)) == nil { child.send(SIGKILL) }
        }
    }
}

/// A nats-server node ended by itself.
public struct NATSNodeExited: Error, CustomStringConvertible {
    public let name: String, status: Int32, log: String
    public var description: String { "nats node \(name) exited with \(status); its log ends: \(log)" }
}
