import RestockPipeline
import Foundation
import Logging
import ServiceLifecycle

/// Runs a store, live or as a standby (`restock serve --standby`): a standby waits, touching neither the
/// broker nor the database, until no process holds the data directory — the live one has stopped or died —
/// then opens it and runs the store, which takes over its broker session with every watch, queued request
/// and outbox message.
public struct StoreLauncher: Service {
    public let configuration: StoreService.Configuration
    public let standby: Bool
    private let logger: Logger

    /// How often a standby looks at the data directory's lock.
    static let standbyPoll = Duration.milliseconds(50)

    public init(configuration: StoreService.Configuration, standby: Bool, logger: Logger) {
        self.configuration = configuration
        self.standby = standby
        self.logger = logger
    }

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
