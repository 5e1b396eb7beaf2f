import Deadlines
import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline

extension StoreService {
    // MARK: Wiring

    /// The connections, hand-offs and shared state of one run, made before anything connects (so that no event or
    /// retained message is missed).
    struct Wiring: Sendable {
        let lifecycle: StoreLifecycle
        let liveness: StoreLiveness
        let session: any BrokerConnection
        let sessionEvents: AsyncStream<MQTTConnectionEvent>
        let publisher: any BrokerConnection
        let publisherEvents: AsyncStream<MQTTConnectionEvent>
        let statusAndClaim: AsyncStream<MQTTMessage>
        /// The admin's questions (the report, the dead-letter list), taken on the publishing connection: made with it, so
        /// that none that arrives once the subscriptions are made is missed.
        let adminReports: AsyncStream<MQTTMessage>, adminLists: AsyncStream<MQTTMessage>
        let journaled: HandOff<JournaledRequest>
        let committed: HandOff<CommittedPublication>
        /// Holds what requests led to until the broker confirms they were delivered to this store alone.
        let fence: DeliveryFence
        let requestWakeups: AsyncStream<Void>
        let requestArrived: AsyncStream<Void>.Continuation
        let outboxWakeups: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
        var outboxGrew: AsyncStream<Void>.Continuation { outboxWakeups.continuation }
        let republish = Flag()
        /// How far the journal has written, for the lag watch.
        let journalMark = JournalMark()
        /// Wakes the journal witness's publisher after each batch journaled, where the backend keeps one (PostgreSQL).
        let witnessWakeups: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)?
        /// Whether this instance has sent its claim (a start stopped before online withdraws it).
        let claimPublished = Flag()
        let heartbeat: Heartbeat
        let metrics: StoreMetrics
        let logger: Logger
        /// The clock the store measures time by (``StoreTiming/clock``).
        let clock: ServiceClock

        init(service: StoreService) throws {
            let topics = service.topics, store = service.store.id
            lifecycle = StoreLifecycle(logger: service.logger, timing: service.timing, metrics: service.metrics)
            metrics = service.metrics
            logger = service.logger
            clock = service.timing.clock
            liveness = StoreLiveness(topics: topics, timing: service.timing)
            (requestWakeups, requestArrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            outboxWakeups = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            journaled = HandOff(capacity: StoreService.handOffCapacity, wakeup: requestArrived)
            committed = HandOff(capacity: StoreService.handOffCapacity, wakeup: outboxWakeups.continuation)
            fence = DeliveryFence(outboxThrough: service.storage.lastOutboxPlace, committed: committed)
            witnessWakeups = service.configuration.storageBackend.journalWitness.map { _ in
                AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            }

            let offline = StoreStatus.connectionLost(store: store, instance: service.instance)
            let gate = LeaseWriteGate(lease: service.storage.ownership, lifecycle: lifecycle)
            publisher = try service.connector.connection(
                clientID: SessionClientIDs.publisher(of: store, instance: service.instance, prefix: topics.prefix), session: .clean,
                will: MQTTWill(topic: try MQTTTopic(topics.status), payload: offline.payloadBytes(), retain: true),
                reconnection: .automatic, journal: nil, writeGate: gate)
            publisherEvents = publisher.connectionEvents()
            statusAndClaim = try publisher.messages(matching: "\(topics.root)/+")
            adminReports = try publisher.messages(matching: topics.adminReport)
            adminLists = try publisher.messages(matching: topics.adminDeadLetters)

            session = try service.connector.connection(
                clientID: StoreService.clientID(for: store, prefix: topics.prefix), session: .persistent, will: nil, reconnection: .whenAllowed,
                journal: RequestJournal(
                    storage: service.storage, topics: topics, requests: journaled, lifecycle: lifecycle, mark: journalMark,
                    metrics: service.metrics, fence: fence, witnessWakeup: witnessWakeups?.continuation,
                    syncsBeforeHandingOn: try service.storage.stoppedWhileApplying()),
                writeGate: gate)
            sessionEvents = session.connectionEvents()

            let (triggers, trigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            heartbeat = Heartbeat(
                client: publisher, session: session, topics: topics, store: store, instance: service.instance, onlineSince: service.clock(),
                lifecycle: lifecycle, lease: service.storage.ownership, triggers: triggers, trigger: trigger, clock: service.clock, interval: service.timing.heartbeat, timer: service.timing.clock,
                goodbyeWait: service.timing.acknowledgementGrace, logger: service.logger)
        }

        /// Another instance's connection ended (its will, or its goodbye), delivered live while this one is live: after
        /// everything that instance sent — late, maybe: held by a partition, or by a freeze, past this one's takeover
        /// (found by an outside trial: an old store's inventory landed after the newer store's, and stayed) — so this one
        /// publishes every retained topic again, over whatever it sent (docs/contract.md, "One store per store id").
        func healAfterAnotherInstance(_ message: MQTTMessage, instance: String) {
            guard message.topic == heartbeat.topics.status, !message.retain, lifecycle.isLive,
                let status = try? JSONDecoder().decode(StoreStatus.self, from: Data(message.payload)),
                !status.isOnline, let other = status.instance, other != instance
            else { return }
            logger.notice(
                "another instance's connection ended: publishing every retained topic again, over anything it sent late",
                metadata: [StoreLoggingKeys.instance: "\(other)"])
            republish.raise()
            requestArrived.yield()
        }

        /// Feeds ``liveness`` from the publishing connection (whoever subscribes it again marks the view stale: the start,
        /// and the session watch before each decision), and has the heartbeat say online again at once when that
        /// connection comes back (a restarted broker may have lost the retained status) or an offline status replaced
        /// this one's (a will of an instance that was taken over, published late), at most once a second (the first beat
        /// over a connection made again waits for the session to answer: ``Heartbeat``). Never over
        /// another instance's online status, nor over the will of an instance seen online since this one went online:
        /// that one may have taken this one's session, which the session watch is about to find out (the next heartbeat
        /// comes all the same, if it did not).
        func watchStatus(instance: String) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    let clock = self.clock
                    var lastAnswer: ContinuousClock.Instant?
                    for await message in statusAndClaim {
                        liveness.received(message)
                        healAfterAnotherInstance(message, instance: instance)
                        guard message.topic == heartbeat.topics.status, lifecycle.isLive,
                            let status = liveness.status, !status.isOnline,
                            // Not the will of an instance seen online since that is not older than this one: that one came
                            // after this one (and died). An older one's will comes when its connection ends, late or not.
                            status.instance.map({ $0 == instance || !liveness.hasBeenSeenOnline($0) || liveness.isOlder($0) }) ?? true,
                            lastAnswer.map({ clock.now - $0 >= .seconds(1) }) ?? true
                        else { continue }
                        lastAnswer = clock.now
                        heartbeat.trigger.yield()
                    }
                }
                group.addTask {
                    var connections = 0
                    for await event in publisherEvents {
                        metrics.count(event, on: .publishing, connections: &connections)
                        if case .connectionLost(let reason) = event {
                            // Whatever the cause (issue 32: a broker whose ACL refused a publish dropped it, silently).
                            logger.warning(
                                "the store's publishing connection to the broker was lost; it connects again, and what it had not had acknowledged is published again",
                                metadata: [StoreLoggingKeys.reason: "\(reason)"])
                        }
                        guard case .connected = event else { continue }
                        heartbeat.trigger.yield()
                    }
                }
            }
        }
    }
}
