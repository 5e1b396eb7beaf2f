import Foundation
import LocalBroker
import Mosquitto
import RestockCore
import RestockMQTT
import Synchronization
import Deadlines

/// `restock serve` of store `apple` as a real process, on its own data directory.
public final class StoreProcess: Sendable {
    /// The broker its start reads the store's status from (the first of a list).
    let statusBroker: BrokerSettings
    public let dataDirectory: URL
    public let arguments: [String]
    public let environment: [String: String]
    /// The store's wall clock, moved by this much (libfaketime, e.g. `+10m`); `nil` for the machine's own.
    public let clockOffset: String?
    private let process = Mutex<ChildProcess?>(nil)
    private let logFile: URL

    private let ownsDataDirectory: Bool
    /// What the command runs under (`ip netns exec NAME`: a test host of the test's own); empty for none.
    public let commandPrefix: [String]

    /// A store on `broker`, with a fresh data directory of its own that is removed with it, or on
    /// `dataDirectory` when given (left in place). It connects to `brokerURL` when given (a proxy, a TLS
    /// listener), to the broker's plain listener otherwise.
    public convenience init(
        broker: MosquittoBroker, brokerURL: String? = nil, dataDirectory: URL? = nil, database: String? = nil, extraArguments: [String] = [],
        environment: [String: String] = [:], clockOffset: String? = nil, commandPrefix: [String] = []
    ) throws {
        try self.init(
            brokerList: brokerURL ?? broker.url, statusBroker: try BrokerSettings(url: broker.url), dataDirectory: dataDirectory,
            database: database, extraArguments: extraArguments, environment: environment, clockOffset: clockOffset,
            commandPrefix: commandPrefix)
    }

    /// A store given `brokerList` (`--broker`: one URL or a list), whose start reads the status from `statusBroker`;
    /// its state in PostgreSQL when `database` is given (`--database`: the data directory then holds only its log). It
    /// runs under `commandPrefix` when given (``commandPrefix``).
    public init(
        brokerList: String, statusBroker: BrokerSettings, dataDirectory: URL? = nil, database: String? = nil, extraArguments: [String] = [],
        environment: [String: String] = [:], clockOffset: String? = nil, commandPrefix: [String] = []
    ) throws {
        self.clockOffset = clockOffset
        self.commandPrefix = commandPrefix
        self.ownsDataDirectory = dataDirectory == nil
        let dataDirectory = try dataDirectory ?? temporaryDirectory()
        self.environment = environment
        self.statusBroker = statusBroker
        self.dataDirectory = dataDirectory
        self.arguments = ["serve", "--broker", brokerList] + (database.map { ["--database", $0] } ?? ["--data", dataDirectory.path]) + extraArguments
        self.logFile = dataDirectory.appendingPathExtension("\(UUID().uuidString.prefix(8)).log")
    }

    deinit {
        process.withLock { $0?.send(SIGKILL) }
        if ownsDataDirectory { try? FileManager.default.removeItem(at: dataDirectory) }
        try? FileManager.default.removeItem(at: logFile)
    }

    /// A store on `broker`, started.
    public static func started(on broker: MosquittoBroker) async throws -> StoreProcess {
        let store = try StoreProcess(broker: broker)
        try await store.start()
        return store
    }

    /// Starts it and waits until its retained status says online (read as `username`, when the broker wants
    /// one). `extraEnvironment` applies to this start only.
    public func start(username: String? = nil, password: String? = nil, extraEnvironment: [String: String] = [:]) async throws {
        let child = try launch(extraEnvironment: extraEnvironment)
        var settings = statusBroker
        (settings.username, settings.password) = (username ?? settings.username, password ?? settings.password)
        let client = StoreClient(connection: settings, topics: try RestockTopics(store: StoreID("apple")))
        do {
            try await waitUntil("the store to come online", within: 90) {
                if let status = child.exitStatus { throw StoreExited(status: status, log: self.log) }
                // The log first: it says online only once the status is published, while a status read before any
                // is retained waits out the client's first-message wait (2 s on a fresh broker, every time it polls).
                guard self.log.contains("online") else { return false }
                return (try? await client.status())?.isOnline == true
            }
        } catch let timeout as DeadlineExceeded {
            throw DeadlineExceeded(what: "\(timeout.what); its log ends: \(log.suffix(600))", seconds: timeout.seconds)
        }
    }

    /// Starts the process without waiting for anything.
    @discardableResult
    public func launch(extraEnvironment: [String: String] = [:]) throws -> ChildProcess {
        var (executable, arguments) = FakeTime.command(
            restockExecutable, self.arguments + ScrapedStores.arguments(adding: self.arguments), offset: clockOffset)
        if let wrapper = commandPrefix.first {
            (executable, arguments) = (wrapper, Array(commandPrefix.dropFirst()) + [executable] + arguments)
        }
        let child = try ChildProcess(
            executable, arguments, outputFile: logFile,
            environment: environment.merging(extraEnvironment) { $1 }.merging(FakeTime.environment(offset: clockOffset)) { $1 },
            ownProcessGroup: clockOffset != nil)
        process.withLock { $0 = child }
        ScrapedStores.register(log: { [logFile] in (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }, exited: { child.exitStatus != nil })
        return child
    }

    /// The running process, to signal it without waiting (SIGSTOP, SIGCONT).
    public func launchedProcess() throws -> ChildProcess {
        guard let child = process.withLock({ $0 }) else { throw StoreExited(status: -1, log: "the store was never launched") }
        return child
    }

    /// The exit status, once the process has exited.
    public var exitStatus: Int32? { process.withLock { $0 }?.exitStatus }

    /// Sends `signal` and waits for the process to exit.
    public func send(_ signal: Int32) async throws {
        guard let child = process.withLock({ $0 }) else { return }
        child.send(signal)
        try await child.waitForExit(within: 30)
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
}

public struct StoreExited: Error, CustomStringConvertible {
    public let status: Int32
    public let log: String
    public init(status: Int32, log: String) {
        self.status = status
        self.log = log
    }
    public var description: String { "restock serve exited with \(status):\n\(log)" }
}
