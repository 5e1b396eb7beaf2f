import Deadlines
import Logging
import RestockPipeline
import ServiceLifecycle

extension StoreService {
    // MARK: Running

    /// Runs the stages as services of one group (docs/architecture.md, "The pipeline"), in the order they stop in
    /// reverse: the session watch closes the session first, the applying stage ends after its batch, the publisher
    /// drains the outbox, and the heartbeat says offline last.
    func runStages(_ wiring: Wiring) async throws {
        let processor = try await storage.withExecutor {
            try RequestProcessor(
                store: core, topics: topics, storage: storage, requests: wiring.journaled, committed: wiring.committed,
                logger: logger, clock: clock, rateLimit: rateLimit, metrics: metrics,
                watchLifetime: configuration.watchLifetime.map { $0.seconds }, fence: wiring.fence, view: store,
                storageWait: wiring.lifecycle.applyWait)
        }
        // Requests and alerts left from before a restart go first.
        wiring.requestArrived.yield()
        wiring.outboxGrew.yield()
        let stages = stages(wiring, processor: processor)
        // The lifecycle's own lines ("Starting service" and each stage's fields) are for its developers, not operators.
        var groupLogger = logger
        groupLogger.logLevel = max(logger.logLevel, .info)
        let group = ServiceGroup(
            configuration: .init(
                services: stages.map {
                    .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: groupLogger))
        var failure: (any Error)?
        do {
            try await withGracefulShutdownHandler {
                try await group.run()
            } onGracefulShutdown: { [health] in
                health.draining()
            }
        } catch {
            failure = error
        }
        await wiring.session.disconnect()
        if wiring.lifecycle.takenOverBy == nil, wiring.lifecycle.leaseLost == nil {
            // Its claim goes with it: a claim read fresh counts as an instance still starting, and the status that says
            // this one stopped may be overwritten by the will of a next start killed early (found by an outside trial:
            // the start after such a crash was refused for 6 s, naming this stopped instance).
            await withdrawClaim(wiring)
        }
        if wiring.lifecycle.takenOverBy != nil {
            // Its will tells the newer instance, after everything this one sent (late, maybe, held by a partition or a
            // freeze), that nothing more comes from it: the newer one then publishes its retained topics over it.
            await wiring.publisher.abandon()
        } else {
            await wiring.publisher.disconnect()
        }
        if let lost = wiring.lifecycle.leaseLost {
            logger.critical("a newer owner holds the store's lease; stopping without writing or publishing anything more: \(lost)")
            throw lost
        }
        if let winner = wiring.lifecycle.takenOverBy {
            logger.critical("another instance of store \(store.id) took over; stopping", metadata: [StoreLoggingKeys.instance: "\(winner)"])
            throw RestockMQTTError.storeTakenOver(store: store.id.rawValue, instance: winner)
        }
        await checkpointAtStop()
        logger.info("store \(store.id) offline")
        if let failure { throw wiring.lifecycle.failure ?? failure }
    }

    /// The stages, in the order they start (and stop in reverse).
    private func stages(_ wiring: Wiring, processor: RequestProcessor) -> [any Service] {
        var stages: [any Service] = [
            // First, so that it stops last: the lease is renewed through the drain.
            LeaseRenewal(
                storage: storage, lifecycle: wiring.lifecycle, interval: timing.leaseRenewal, clock: timing.clock, logger: logger,
                health: health, metrics: metrics),
            wiring.heartbeat,
            JournalLagWatch(
                mark: wiring.journalMark, applied: { processor.appliedThrough }, threshold: Self.lagWarningThreshold,
                checkEvery: timing.lagCheck, reportEvery: timing.pauseReport, clock: timing.clock, logger: logger),
            GaugeSampler(
                metrics: metrics, mark: wiring.journalMark, applied: { processor.appliedThrough }, store: core, storage: storage,
                lifecycle: wiring.lifecycle, fence: wiring.fence, interval: timing.gaugeSampling,
                maximumWatches: configuration.maximumWatches, fullReportEvery: timing.pauseReport, logger: logger,
                health: health),
            OutboxPublisher(
                client: wiring.publisher, storage: storage, committed: wiring.committed, fence: wiring.fence, wakeups: wiring.outboxWakeups,
                topics: topics, logger: logger, drainTimeout: configuration.drainTimeout, lifecycle: wiring.lifecycle,
                acknowledgementGrace: timing.acknowledgementGrace, metrics: metrics,
                alertExpiry: configuration.alertExpiry.map { UInt32(clamping: $0.components.seconds) }, retryInterval: timing.retry,
                clock: timing.clock),
            ExpiryTimer(wake: wiring.requestArrived, interval: timing.retry, clock: timing.clock),
            AdminQueries(
                client: wiring.publisher, reports: wiring.adminReports, lists: wiring.adminLists, topics: topics, storage: storage, clock: clock, logger: logger, metrics: metrics,
                gaugeInterval: .seconds(60)),
            ApplyStage(
                processor: processor, storage: storage, wakeups: wiring.requestWakeups, republishRequested: wiring.republish,
                lifecycle: wiring.lifecycle, logger: logger, retryInterval: timing.retry, clock: timing.clock),
            SessionWatch(
                client: wiring.session, events: wiring.sessionEvents, storage: storage, lifecycle: wiring.lifecycle,
                liveness: wiring.liveness, fence: wiring.fence, store: store.id, instance: instance, probeFilter: topics.deliveryProbe,
                republish: { [republish = wiring.republish, arrived = wiring.requestArrived] in
                    republish.raise()
                    arrived.yield()
                },
                refreshView: { try await self.refreshView(wiring) },
                logger: logger, probeInterval: timing.retry, readTimeout: timing.staleAfter, reportEvery: timing.pauseReport,
                metrics: metrics, health: health, clock: timing.clock),
        ]
        if let witness = configuration.storageBackend.journalWitness, let wakeups = wiring.witnessWakeups {
            // Beside the heartbeat, so that it stops late: what the drain journals is witnessed too.
            stages.insert(
                JournalWitnessPublisher(
                    client: wiring.publisher, topic: topics.journalWitness, store: store.id, witness: witness, wakeups: wakeups.stream,
                    wake: wakeups.continuation, lifecycle: wiring.lifecycle, interval: timing.heartbeat, clock: timing.clock, logger: logger),
                at: 2)
        }
        return stages
    }
}
