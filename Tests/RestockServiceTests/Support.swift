import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockPostgres
import RestockTestSupport
import ServiceLifecycle
import Synchronization
import Testing

let apple = try! StoreID("apple")
let appleTopics = try! RestockTopics(store: apple)
func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
/// The contract's intervals a hundred times shorter: a heartbeat every 20 ms.
let fast = StoreTiming.contract.scaled(down: 100)

/// Where a test's store keeps its state: a volume in memory (the default: no disk, and a store started again on the same
/// volume finds its state), SQLite in a data directory, for tests that look at or change its files, or a database of
/// the suite's PostgreSQL server (``Engine``: the tests that run on both backends).
enum TestStorage: Sendable {
    /// The memory backend, on this volume.
    case memory(InMemoryVolume)
    /// SQLite in this data directory, which the test owns (and removes).
    case sqlite(URL)
    /// PostgreSQL, in this database (of ``SuitePostgres``'s server).
    case postgres(PostgresSettings)

    /// A new, empty volume in memory.
    static func memory() -> TestStorage { .memory(InMemoryVolume()) }

    /// The backend a store service opens.
    var backend: any StoreStorageBackend {
        switch self {
        case .memory(let volume): InMemoryStorageBackend(volume: volume)
        case .sqlite(let directory): SQLiteStorage(directory: directory)
        case .postgres(let settings): PostgresStorage(settings: settings)
        }
    }

    /// The data directory of SQLite; for memory, a path never made: the configuration needs one, the backend uses none.
    var dataDirectory: URL {
        if case .sqlite(let directory) = self { return directory }
        return URL(filePath: "/nonexistent/restock-memory")
    }

    /// The state as a store would restore it, read while a store may run on it (on PostgreSQL, off Swift's cooperative
    /// pool: it blocks on the database).
    func snapshot() async throws -> StoreSnapshot {
        switch self {
        case .memory(let volume): volume.snapshot()
        case .sqlite(let directory): try StoreDatabase.snapshot(readingOnly: directory)
        case .postgres(let settings):
            try await withTaskExecutorPreference(Self.reader) { try PostgresStorage(settings: settings).snapshot(of: apple) ?? StoreSnapshot() }
        }
    }

    /// How many requests wait in the journal, messages in the outbox, and watches in the state, read as ``snapshot()``.
    func queueLengths() async throws -> (inbox: Int, outbox: Int, watches: Int) {
        switch self {
        case .memory(let volume): volume.queueLengths()
        case .sqlite(let directory): try StoreDatabase.queueLengths(readingOnly: directory)
        case .postgres(let settings):
            try await withTaskExecutorPreference(Self.reader) { try PostgresStorage(settings: settings).queueLengths(of: apple) ?? (0, 0, 0) }
        }
    }

    /// The thread the tests' reads of PostgreSQL block on.
    private static let reader = PipelineExecutor(label: "restock.test-reader")
}

/// The backends the tests that run on each of them take as their argument.
enum Engine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, postgresql

    var testDescription: String { "on \(rawValue)" }

    /// A new, empty state on this backend: a volume, or a database of its own on the suite's server (``SuitePostgres``).
    func storage() async throws -> TestStorage {
        switch self {
        case .memory: return .memory()
        case .postgresql: return .postgres(try await SuitePostgres.newDatabase())
        }
    }
}

/// One PostgreSQL server for a suite whose tests run on ``Engine/postgresql`` (the trait ``Trait/postgresServer``),
/// started before its first test and stopped after its last; each test takes a database of its own.
struct SuitePostgres: SuiteTrait, TestScoping {
    @TaskLocal static var server: PrivatePostgres?

    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server = try await PrivatePostgres.launch()
        do {
            try await Self.$server.withValue(server) { try await function() }
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    /// A new database on the suite's server, and the settings of a store on it.
    static func newDatabase() async throws -> PostgresSettings {
        guard let server else { throw PostgresUnavailable(reason: "the suite has no PostgreSQL server: give it the trait .postgresServer") }
        let name = "test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        _ = try await server.psql("CREATE DATABASE \(name)")
        return PostgresSettings(host: server.host, port: server.port, user: server.user, database: name)
    }
}

extension SuiteTrait where Self == SuitePostgres {
    /// A PostgreSQL server for the suite's tests on ``Engine/postgresql``.
    static var postgresServer: Self { SuitePostgres() }
}

/// A store service running in this process on an ``InMemoryBroker``, in a `ServiceGroup` of its own (so a test can
/// stop it gracefully, as SIGTERM does), its state in memory unless the test asks for SQLite (``TestStorage``).
final class RunningStore: Sendable {
    let service: StoreService
    let group: ServiceGroup
    let run: Task<Void, any Error>
    /// Where its state is: a store started on it again finds it.
    let storage: TestStorage
    let log: LogCapture
    /// How its run ended, once it has.
    private let ending = RunEnding()

    private final class RunEnding: Sendable {
        let result = Mutex<Result<Void, any Error>?>(nil)
    }

    init(on broker: InMemoryBroker, storage: TestStorage = .memory(), drainTimeout: Duration = .seconds(5), timing: StoreTiming = fast) throws {
        self.storage = storage
        let log = LogCapture()
        self.log = log
        var logger = Logger(label: "test.store", factory: { _ in log })
        logger.logLevel = .info
        service = try StoreService(
            configuration: .init(
                connection: BrokerSettings(broker: .hostname("in-memory")), store: apple, dataDirectory: storage.dataDirectory,
                drainTimeout: drainTimeout, customerRequestRate: nil),
            logger: logger, connector: broker, timing: timing, storage: storage.backend)
        group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        run = Task { [group, ending] in
            do {
                try await group.run()
                ending.result.withLock { $0 = .success(()) }
            } catch {
                ending.result.withLock { $0 = .failure(error) }
                throw error
            }
        }
    }

    /// The data directory of a store on SQLite; for one in memory, a path never made (``TestStorage/dataDirectory``).
    var dataDirectory: URL { storage.dataDirectory }

    /// How many requests wait in the journal, messages in the outbox, and watches in its state, read while it runs.
    func queueLengths() async throws -> (inbox: Int, outbox: Int, watches: Int) { try await storage.queueLengths() }

    /// Stops it gracefully (SIGTERM) and waits for it to end, for at most 120 s; returns how its run ended (a failure
    /// with the timeout when it did not: a store that goes on fails the test instead of hanging the whole run).
    @discardableResult
    func stop() async -> Result<Void, any Error> {
        await group.triggerGracefulShutdown()
        do {
            return try await result(within: 120)
        } catch {
            return .failure(error)
        }
    }

    /// How its run ended, waited for at most `seconds`: a store that goes on fails the test instead of hanging it.
    func result(within seconds: Double) async throws -> Result<Void, any Error> {
        try await waitUntil("the store's run to end", within: seconds, pollEvery: .milliseconds(10)) { self.hasEnded }
        return ending.result.withLock { $0 } ?? .success(())
    }

    /// Whether its run has ended.
    var hasEnded: Bool { ending.result.withLock { $0 != nil } }

    deinit { run.cancel() }
}

/// Log lines kept in memory.
final class LogCapture: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "\(event.level) \(metadata) \(event.message)"
        lines.withLock { $0.append(line) }
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .info }
        set {}
    }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
}

/// Everything published on topics matching `filter`, as a subscriber sees it.
final class Subscriber: Sendable {
    let connection: any BrokerConnection
    private let received = Received()
    private let reader: Task<Void, Never>

    private final class Received: Sendable {
        let messages = Mutex<[MQTTMessage]>([])
    }

    init(_ broker: InMemoryBroker, filter: String, clientID: String = "watcher-\(UUID().uuidString.prefix(6))") async throws {
        connection = try broker.connection(clientID: clientID)
        let messages = try connection.messages(matching: filter)
        try await connection.connect()
        try await connection.subscribe(to: filter)
        let received = self.received
        reader = Task { for await message in messages { received.messages.withLock { $0.append(message) } } }
    }

    deinit { reader.cancel() }

    var messages: [MQTTMessage] { received.messages.withLock { $0 } }

    /// The payloads received on `topic`, decoded.
    func payloads<T: Decodable>(_ type: T.Type, on topic: String) -> [T] {
        messages.filter { $0.topic == topic }.compactMap { try? JSONDecoder().decode(T.self, from: Data($0.payload)) }
    }
}

extension InMemoryBroker {
    /// The retained status, decoded.
    var status: StoreStatus? {
        retainedMessage(on: appleTopics.status).flatMap { try? JSONDecoder().decode(StoreStatus.self, from: Data($0.payload)) }
    }
}

/// A store launched as `restock serve` does (``StoreLauncher``, live or standby), over `broker`, on `backend`, in a
/// service group of its own; its log and health.
struct LaunchedStore {
    let group: ServiceGroup
    let run: Task<Void, any Error>
    let health: StoreHealth
    let log: LogCapture

    init(standby: Bool, on broker: InMemoryBroker, backend: any StoreStorageBackend) {
        let log = LogCapture()
        var logger = Logger(label: "test.launcher", factory: { _ in log })
        logger.logLevel = .info
        var configuration = StoreService.Configuration(
            connection: BrokerSettings(broker: .hostname("in-memory")), store: apple, dataDirectory: URL(filePath: "/nonexistent/restock-launched"),
            customerRequestRate: nil)
        configuration.storage = backend
        let health = StoreHealth()
        let launcher = StoreLauncher(configuration: configuration, standby: standby, logger: logger, health: health, connector: broker, timing: fast)
        let group = ServiceGroup(configuration: .init(services: [launcher], logger: logger))
        (self.group, self.health, self.log) = (group, health, log)
        run = Task { try await group.run() }
    }

    /// Stops it gracefully and waits for its run to end.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
