extension MQTTClientStateMachine {
    /// The subscriptions to make again after reconnecting to a broker that lost the session, and those made again by
    /// the client itself: awaiting their SUBACK, or refused (a cluster electing leaders answers 0x80) and asked for
    /// again by ``MQTTBackoff/resubscription``. Kept across reconnects, since a broker that kept the session lacks
    /// just the refused ones.
    struct Subscriptions {
        /// A filter is added before its SUBSCRIBE is sent (and put back as it was if that fails), so a reconnect in
        /// between keeps it.
        private(set) var active: [String: ActiveSubscription] = [:]
        /// Made again by the client, by message id, awaiting their SUBACK.
        private var madeAgain: [Int32: String] = [:]
        /// Refused when made again: when to ask again, and how many times it was asked.
        private var refused: [String: (due: ContinuousClock.Instant, attempt: Int)] = [:]

        /// Whether a subscription made again was refused and waits to be asked for again.
        var hasRefusals: Bool { !refused.isEmpty }

        /// `filter` is about to be subscribed to; returns what it replaces.
        mutating func subscribing(to filter: String, _ subscription: ActiveSubscription) -> ActiveSubscription? {
            active.updateValue(subscription, forKey: filter)
        }

        /// Subscribing to `filter` failed: puts back what it had.
        mutating func failed(_ filter: String, restoring previous: ActiveSubscription?) {
            active[filter] = previous
        }

        /// `filter` is about to be unsubscribed from.
        mutating func unsubscribing(from filter: String) {
            active[filter] = nil
        }

        /// A CONNACK without the session: every active subscription, to make again (any refusal is forgotten), or
        /// `nil` when there is none.
        mutating func makeAgain() -> [String: ActiveSubscription]? {
            guard !active.isEmpty else { return nil }
            refused = [:]
            return active
        }

        /// The client made `filter` again itself, with message id `mid`.
        mutating func madeAgain(_ filter: String, mid: Int32) {
            madeAgain[mid] = filter
        }

        /// The connection closed: a subscription made again and unanswered is asked for again as soon as connected.
        mutating func connectionLost(at now: ContinuousClock.Instant) {
            for (_, filter) in madeAgain where refused[filter] == nil {
                refused[filter] = (now, 1)
            }
            madeAgain.removeAll()
        }

        /// A SUBACK for `mid`; returns whether it answered a subscription the client made again (else it is a caller's).
        mutating func answered(mid: Int32, granted: Bool, at now: ContinuousClock.Instant) -> Bool {
            guard let filter = madeAgain.removeValue(forKey: mid) else { return false }
            guard !granted, active[filter] != nil else {
                refused[filter] = nil
                return true
            }
            let attempt = (refused[filter]?.attempt ?? 0) + 1
            refused[filter] = (now + MQTTBackoff.resubscription.delay(beforeAttempt: attempt - 1, random: 0), attempt)
            return true
        }

        /// The refused subscriptions due to be asked for again at `now`, by filter.
        mutating func due(at now: ContinuousClock.Instant) -> [(String, ActiveSubscription)] {
            var due: [(String, ActiveSubscription)] = []
            for (filter, entry) in refused where entry.due <= now {
                guard let subscription = active[filter] else {
                    refused[filter] = nil
                    continue
                }
                // Not due again until its answer: a SUBACK lost with the connection leaves it due after the longest wait.
                refused[filter]?.due = now + MQTTBackoff.resubscription.maximumDelay
                due.append((filter, subscription))
            }
            return due.sorted { $0.0 < $1.0 }
        }
    }

    /// The three tables of operations awaiting an acknowledgement.
    struct Operations {
        var publishes = LibMosquittoPendingAcks<Void>()
        var subscribes = LibMosquittoPendingAcks<MQTTQoS>()
        var unsubscribes = LibMosquittoPendingAcks<Void>()

        /// What libmosquitto will not send again after reconnecting: everything but QoS 1 and 2 publishes.
        mutating func takeFailingOnDisconnect() -> [any FailableOwner] {
            publishes.takeFailingOnDisconnect() + subscribes.takeFailingOnDisconnect() + unsubscribes.takeFailingOnDisconnect()
        }

        /// Every operation, at shutdown.
        mutating func takeAll() -> [any FailableOwner] {
            publishes.takeAll() + subscribes.takeAll() + unsubscribes.takeAll()
        }
    }

    /// The message streams (each with its filter) and the event streams, by id.
    struct Streams {
        private var nextID: UInt64 = 0
        private var messages: [UInt64: (filter: MQTTTopicFilter, sink: MessageSink)] = [:]
        private var events: [UInt64: EventSink] = [:]

        /// The event streams.
        var eventSinks: [EventSink] { Array(events.values) }

        /// The message streams whose filter matches `topic`.
        func sinks(matching topic: String) -> [MessageSink] {
            messages.values.filter { $0.filter.matches(topic) }.map(\.sink)
        }

        /// Adds a message stream; returns its id.
        mutating func add(_ sink: MessageSink, filter: MQTTTopicFilter) -> UInt64 {
            defer { nextID += 1 }
            messages[nextID] = (filter, sink)
            return nextID
        }

        /// Adds an event stream; returns its id.
        mutating func add(_ sink: EventSink) -> UInt64 {
            defer { nextID += 1 }
            events[nextID] = sink
            return nextID
        }

        /// A stream was released.
        mutating func remove(_ id: UInt64) {
            messages[id] = nil
            events[id] = nil
        }

        /// Forgets every stream: the action that ends them.
        mutating func endAll() -> Action {
            defer { (messages, events) = ([:], [:]) }
            return .endStreams(events: eventSinks, messages: messages.values.map(\.sink))
        }
    }
}
