import RestockPipeline
import Foundation
import Logging
import ServiceLifecycle

/// Runs a store, live or as a standby (`restock serve --standby`): a standby waits, touching neither the
/// broker nor the database, until no process holds the data directory — the live one has stopped or died —
/// then opens it and runs the store, which takes over its broker session with every watch, queued request
/// and outbox message.
public struct StoreLauncher: Service {
    /// The store it runs.
    public let configuration: StoreService.Configuration
    /// Whether it waits as a standby until the live store process on the same data directory ends.
    public let standby: Bool
    private let logger: Logger

    /// How often a standby looks at the data directory's lock.
    static let standbyPoll = Duration.milliseconds(50)

    /// A launcher of the store `configuration` describes, live or standby.
    public init(configuration: StoreService.Configuration, standby: Bool, logger: Logger) {
        self.configuration = configuration
        self.standby = standby
        self.logger = logger
    }

    /// Runs the store (after waiting, as a standby) until graceful shutdown.
    public func run() async throws {
        guard standby else {
            try await StoreService(configuration: configuration, logger: logger).run()
            return
        }
        let directory = configuration.dataDirectory
        logger.info("standby for store \(configuration.store): waiting for the live store process on \(directory.path) to stop")
        while true {
            do {
                try await cancelWhenGracefulShutdown {
                    while StoreDatabase.isInUse(directory) { try await Task.sleep(for: Self.standbyPoll) }
                }
            } catch is CancellationError {
                logger.info("standby stopped")
                return
            }
            let service: StoreService
            do {
                service = try StoreService(configuration: configuration, logger: logger)
            } catch RestockMQTTError.dataDirectoryInUse {
                continue  // another standby was quicker
            }
            logger.notice("the live store process stopped: this standby takes over")
            try await service.run()
            return
        }
    }
}
