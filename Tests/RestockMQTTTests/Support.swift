import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockMQTT
import RestockPipeline
import RestockTestSupport
import Synchronization
import Deadlines
import LocalBroker

func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
let apple = try! StoreID("apple")
let appleTopics = try! RestockTopics(store: apple)

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

    /// - Parameters:
    ///   - dataDirectory: The data directory to start on (a restart); a new one when `nil`.
    ///   - configure: Changes to the store's configuration.
    static func start(
        broker: MosquittoBroker, alertsPerUnit: Int = 0, dataDirectory: URL? = nil,
        configure: (inout StoreService.Configuration) -> Void = { _ in }
    ) async throws -> InProcessStore {
        let dataDirectory = try dataDirectory ?? temporaryDirectory()
        var logger = Logging.Logger(label: "test.store")
        logger.logLevel = .warning
        var configuration = StoreService.Configuration(
            connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), store: apple,
            dataDirectory: dataDirectory, alertsPerUnit: alertsPerUnit)
        configure(&configuration)
        let service = try StoreService(configuration: configuration, logger: logger)
        let finished = CompletionFlag()
        let task = Task {
            defer { finished.set() }
            try await service.run()
        }
        let client = StoreClient(connection: BrokerSettings(broker: try BrokerAddress(url: broker.url)), topics: appleTopics)
        try await waitUntil("the store to come online", within: 60) {
            // A store that ended while starting fails the wait with its own error, not a timeout.
            if finished.isSet { try await task.value }
            return (try? await client.status())?.isOnline == true
        }
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

// MARK: A fan-out under way (the durability and lease tests)

/// Publishes a subscribe request for each customer, keeping many in flight.
func subscribeAll(_ count: Int, through broker: MosquittoBroker, mode: String = "every") async throws {
    let client = try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: "requests-\(UUID().uuidString.prefix(6))"))
    try await client.connect()
    try await client.sendAll(0..<count) { client, index in
        try client.send(Array(#"{"sku":"switch-2","mode":"\#(mode)"}"#.utf8), to: "restock/apple/subscribe/c\(index)")
    }
    await client.disconnect()
}

/// 3,000 customers watching switch-2, a restock, and a collector that has seen the fan-out begin.
func fanOutBegun(_ store: StoreProcess, on broker: MosquittoBroker) async throws -> AlertCollector {
    let data = store.dataDirectory
    try await subscribeAll(3_000, through: broker)
    try await waitUntil("3,000 watches stored", within: 60) { storedWatches(data) == 3_000 }
    let collector = try await AlertCollector(broker: broker)
    try await mosquittoPub(broker, "restock/apple/admin/stock", #"{"sku":"switch-2","set":10}"#)
    try await waitUntil("the fan-out to begin", within: 30) { collector.total > 0 }
    return collector
}

func storedWatches(_ data: URL) -> Int { (try? StoreDatabase.snapshot(readingOnly: data).watches.count) ?? 0 }
