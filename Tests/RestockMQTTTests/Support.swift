import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import Synchronization

/// The `restock` executable built with the tests (it sits beside the test bundle).
let restockExecutable: String = {
    let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? CommandLine.arguments[0])
    var directory = bundle.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("restock").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return "restock"
}()

/// A fresh temporary directory, removed by the caller's `defer`.
func temporaryDirectory(_ name: String = "restock-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
let apple = try! StoreID("apple")
let appleTopics = try! RestockTopics(store: apple)

/// `restock serve` as a real process, on its own data directory.
final class StoreProcess: Sendable {
    let broker: MosquittoBroker
    let dataDirectory: URL
    let arguments: [String]
    let environment: [String: String]
    private let process = Mutex<ChildProcess?>(nil)
    private let logFile: URL

    /// A store on `broker`, with a fresh data directory of its own that is removed with it.
    init(broker: MosquittoBroker, extraArguments: [String] = [], environment: [String: String] = [:]) throws {
        let dataDirectory = try temporaryDirectory()
        self.environment = environment
        self.broker = broker
        self.dataDirectory = dataDirectory
        self.arguments = ["serve", "--broker", broker.url, "--data", dataDirectory.path] + extraArguments
        self.logFile = dataDirectory.appendingPathExtension("log")
    }

    deinit {
        process.withLock { $0?.send(SIGKILL) }
        try? FileManager.default.removeItem(at: dataDirectory)
        try? FileManager.default.removeItem(at: logFile)
    }

    /// A store on `broker`, started.
    static func started(on broker: MosquittoBroker) async throws -> StoreProcess {
        let store = try StoreProcess(broker: broker)
        try await store.start()
        return store
    }

    /// Starts it and waits until its retained status says online (read as `username`, when the broker wants one).
    func start(username: String? = nil, password: String? = nil) async throws {
        let child = try ChildProcess(restockExecutable, arguments, outputFile: logFile, environment: environment)
        process.withLock { $0 = child }
        let client = StoreClient(
            connection: BrokerConnection(broker: try BrokerAddress(url: broker.url), username: username, password: password),
            topics: appleTopics)
        try await waitUntil("the store to come online", within: 30) {
            if let status = child.exitStatus { throw StoreExited(status: status, log: self.log) }
            return (try? await client.status())?.isOnline == true && self.log.contains("online")
        }
    }

    func send(_ signal: Int32) async throws {
        guard let child = process.withLock({ $0 }) else { return }
        child.send(signal)
        try await child.waitForExit(within: 30)
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
}

struct StoreExited: Error, CustomStringConvertible {
    let status: Int32
    let log: String
    var description: String { "restock serve exited with \(status):\n\(log)" }
}

/// `mosquitto_sub` as a real process, printing `topic payload` lines.
final class TopicWatcher: Sendable {
    private let child: ChildProcess
    private let prefix: String
    private let outputFile: URL

    /// Starts `mosquitto_sub` on `filter` and waits for its SUBACK.
    init(broker: MosquittoBroker, filter: String, extra: [String] = []) async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("sub-\(UUID().uuidString).log")
        outputFile = output
        // Line-buffered: redirected to a file, mosquitto_sub would hold its debug lines (the SUBACK) back.
        child = try ChildProcess(
            "stdbuf", ["-oL", "mosquitto_sub", "-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-v", "-d", "-t", filter] + extra,
            outputFile: output)
        prefix = String(filter.prefix { $0 != "+" && $0 != "#" })
        try await waitUntil("mosquitto_sub to subscribe to \(filter)", within: 15) { [child] in child.output.contains("SUBACK") }
    }

    deinit {
        child.send(SIGKILL)
        try? FileManager.default.removeItem(at: outputFile)
    }

    /// Every `(topic, payload)` received so far.
    var messages: [(topic: String, payload: String)] {
        child.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(prefix), let space = line.firstIndex(of: " ") else { return nil }
            return (String(line[..<space]), String(line[line.index(after: space)...]))
        }
    }

    /// The payloads received on `topic`, decoded.
    func payloads<T: Decodable>(_ type: T.Type, on topic: String) -> [T] {
        messages.filter { $0.topic == topic }.compactMap { try? JSONDecoder().decode(T.self, from: Data($0.payload.utf8)) }
    }

    /// Waits until `condition` holds for the messages received.
    func wait(for what: String, within seconds: Double = 20, _ condition: @escaping @Sendable (TopicWatcher) -> Bool) async throws {
        try await waitUntil(what, within: seconds) { condition(self) }
    }
}

/// Publishes with the real `mosquitto_pub`, QoS 1.
func mosquittoPub(_ broker: MosquittoBroker, _ topic: String, _ message: String) async throws {
    let result = try await ChildProcess.run(
        "mosquitto_pub", ["-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-t", topic, "-m", message])
    guard result.status == 0 else { throw StoreExited(status: result.status, log: result.standardError) }
}

/// Publishes raw bytes (for invalid UTF-8 and oversize payloads) with `mosquitto_pub -s` from standard input.
func mosquittoPub(_ broker: MosquittoBroker, _ topic: String, bytes: [UInt8]) async throws {
    let result = try await ChildProcess.run(
        "mosquitto_pub", ["-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-t", topic, "-s"],
        input: Data(bytes))
    guard result.status == 0 else { throw StoreExited(status: result.status, log: result.standardError) }
}

/// A store service running in this process, so a test can look at its in-process `Store`.
final class InProcessStore: Sendable {
    let service: StoreService
    let task: Task<Void, any Error>
    let dataDirectory: URL
    private let finished: CompletionFlag

    private init(service: StoreService, task: Task<Void, any Error>, dataDirectory: URL, finished: CompletionFlag) {
        self.service = service
        self.task = task
        self.dataDirectory = dataDirectory
        self.finished = finished
    }

    deinit {
        task.cancel()
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    static func start(broker: MosquittoBroker, alertsPerUnit: Int = 0) async throws -> InProcessStore {
        let dataDirectory = try temporaryDirectory()
        var logger = Logging.Logger(label: "test.store")
        logger.logLevel = .warning
        let service = try StoreService(
            configuration: .init(
                connection: BrokerConnection(broker: try BrokerAddress(url: broker.url)), store: apple,
                dataDirectory: dataDirectory, alertsPerUnit: alertsPerUnit),
            logger: logger)
        let finished = CompletionFlag()
        let task = Task {
            defer { finished.set() }
            try await service.run()
        }
        let client = StoreClient(connection: BrokerConnection(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await waitUntil("the store to come online", within: 30) { (try? await client.status())?.isOnline == true }
        return InProcessStore(service: service, task: task, dataDirectory: dataDirectory, finished: finished)
    }

    func stop() async throws {
        task.cancel()
        try await waitUntil("the store service to stop", within: 30) { [finished] in finished.isSet }
    }
}

/// Set once, read from anywhere.
final class CompletionFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
