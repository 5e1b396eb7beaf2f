import Foundation
import Deadlines
import Synchronization
import Mosquitto
import RestockPipeline

extension StoreClient {
    /// Subscribes to the store's status, `answer` (or `answerSubscriptions`) and `errors` — asking again while a
    /// clustered broker refuses subscriptions (``subscriptionRetry``, not counted in `wait`) — then waits for the store
    /// to be online, publishes `payload` on `topic` and waits for the first live (not retained) message on `answer`, or
    /// an error report about `topic` on `errors`. The wait for the store and its answer is bounded by `wait` seconds.
    func request<Answer: Decodable & Sendable>(
        _ topic: String, payload: [UInt8], answer: String, errors: String, wait: Double,
        first: @escaping @Sendable () async throws -> Void = {}, accepting: @escaping @Sendable (Answer) -> Bool = { _ in true },
        properties: MQTTMessageProperties = MQTTMessageProperties(), answerSubscriptions: [String]? = nil
    ) async throws -> Answer {
        try await withClient { client in
            let watch = try await self.watchStatus(client)
            defer { watch.reader.cancel() }
            let answers = try client.messages(matching: answer)
            let refusals = try client.messages(matching: errors)
            for filter in answerSubscriptions ?? [answer] { try await client.subscribe(to: filter, retrying: self.subscriptionRetry) }
            try await client.subscribe(to: errors, retrying: self.subscriptionRetry)
            let storeOnline = Atomic<Bool>(false)
            do {
                return try await withDeadline(wait, waitingFor: "an answer on \(answer)") {
                    try await first()
                    try await self.waitUntilOnline(watch.liveness)
                    storeOnline.store(true, ordering: .releasing)
                    try await client.send(Array(payload), to: topic, retain: false, properties: properties).acknowledged()
                    return try await Self.firstAnswer(Answer.self, on: answers, orRefusalOf: topic, on: refusals, accepting: accepting)
                }
            } catch let timeout as DeadlineExceeded {
                guard storeOnline.load(ordering: .acquiring) else {
                    // On a cluster, or for a client that waits for a new store, a missing status was waited for (below): none came.
                    if watch.liveness.status == nil { throw RestockMQTTError.unknownStore(store: self.topics.store.rawValue) }
                    throw RestockMQTTError.storeOffline(store: self.topics.store.rawValue)
                }
                throw RestockMQTTError.noAnswer(what: timeout.what, seconds: timeout.seconds)
            }
        }
    }

    /// The store's status as `client` reads it, from the retained message on: subscribed (asking again while the
    /// broker refuses), and read by `reader` until it is cancelled.
    private func watchStatus(_ client: any BrokerConnection) async throws -> (liveness: StoreLiveness, reader: Task<Void, Never>) {
        let liveness = StoreLiveness(topics: topics)
        let statuses = try client.messages(matching: topics.status)
        let reader = Task {
            for await message in statuses { liveness.received(message) }
        }
        liveness.connected(readingClaim: false)
        do {
            try await client.subscribe(to: topics.status, retrying: subscriptionRetry)
        } catch {
            reader.cancel()
            throw error
        }
        liveness.subscribed()
        return (liveness, reader)
    }

    /// Returns once the store is online and taking requests, judged by docs/contract.md, "One store per store id":
    /// its status says online, and its heartbeat reads fresh on this machine's clock or changes while this client
    /// watches (so a clock that is off by minutes does not make a live store look offline). A store that is offline
    /// is waited for, within the caller's deadline.
    /// - Throws: ``RestockMQTTError/unknownStore(store:)`` at once when the broker holds no status of the store;
    ///   ``RestockMQTTError/storePaused(store:reason:)`` when its status says it takes no requests for now. On a cluster
    ///   (a broker list), or for a client that ``waitsForNewStore``, a missing status is waited for instead: a node
    ///   electing leaders, or a broker restarted without its retained messages, answers the subscription without it,
    ///   and a live store's next status (at once when it reconnects, then every 2 s) brings it.
    private func waitUntilOnline(_ liveness: StoreLiveness) async throws {
        try await liveness.waitUntilCurrent()
        guard liveness.status != nil || !connection.fallbackBrokers.isEmpty || waitsForNewStore else {
            throw RestockMQTTError.unknownStore(store: topics.store.rawValue)
        }
        while true {
            let signal = liveness.nextChange()
            // A status with no heartbeat comes from a store before heartbeats: its word is taken.
            if let status = liveness.status, status.isOnline,
                status.heartbeatAt == nil || status.isLive(at: Date()) || liveness.isLive(status.instance ?? "")
            {
                if let reason = status.paused { throw RestockMQTTError.storePaused(store: topics.store.rawValue, reason: reason) }
                return
            }
            // Only a status that comes changes the answer: the next one (the caller's deadline bounds the wait).
            try await liveness.waitForChange(signal, until: nil)
        }
    }
}
