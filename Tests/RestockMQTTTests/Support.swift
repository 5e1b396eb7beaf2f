import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockMQTT
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
