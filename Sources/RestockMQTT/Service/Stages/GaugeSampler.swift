import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// Samples the store's gauges every `interval` (docs/operations.md, "Health and metrics"): the journal lag, the messages
/// held by the delivery fence, the outbox's
/// depth (read on the pipeline's thread), the watches and customers, and the time spent paused so far. Sampled, not
/// kept up to date on the path of each request.
struct GaugeSampler: Service {
    let metrics: StoreMetrics
    let mark: JournalMark
    /// The last request applied.
    let applied: @Sendable () -> Int64
    let store: Store
    let database: StoreDatabase
    let lifecycle: StoreLifecycle
    let fence: DeliveryFence
    let interval: Duration

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true {
                metrics.journalLag.record(mark.lag(applied: applied()))
                metrics.publicationsHeld.record(fence.heldCount)
                metrics.watches.record(store.watchCount)
                metrics.customers.record(store.customerCount)
                lifecycle.countPausedTime()
                // A store that cannot read its outbox now (a lock) keeps the last figure.
                if let depth = try? await withTaskExecutorPreference(database.executor, operation: { try database.outboxDepth() }) {
                    metrics.outboxDepth.record(depth)
                }
                try await Task.sleep(for: interval)
            }
        }
    }
}

extension StoreMetrics {
    /// Reports a connection's event: whether it is up, and each connection after the first as a reconnect.
    func count(_ event: MQTTConnectionEvent, on connection: Connection, connections: inout Int) {
        switch event {
        case .connected:
            connections += 1
            brokerConnected[connection]?.record(1)
            if connections > 1 { brokerReconnects[connection]?.increment() }
        case .connectionLost, .disconnected:
            brokerConnected[connection]?.record(0)
        }
    }
}
