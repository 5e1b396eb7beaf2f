/// All of an ``MQTTClient``'s mutable state, and its transitions: the phase of the connection, the stop request,
/// the reconnect permission, the operations awaiting acknowledgement, the active subscriptions, the session
/// being prepared and the streams.
///
/// Its mutating methods take an event (connect requested, CONNACK, connection closed, an acknowledgement, a
/// message and what the journal did with it, stop requested, …) and return the ``Action``s to take. It does
/// nothing itself: no lock, no libmosquitto, no continuation resumed. ``LibMosquittoContext`` holds it under its
/// mutex (and is the only code that mutates it) and performs the actions after releasing the lock.
struct MQTTClientStateMachine {
    /// One of the three tables of operations awaiting an acknowledgement.
    struct AckTable<Value: Sendable> {
        fileprivate let keyPath: WritableKeyPath<MQTTClientStateMachine, LibMosquittoPendingAcks<Value>>
    }

    let reconnection: MQTTReconnection

    private(set) var phase = Phase.idle
    private(set) var stop = Stop.no
    /// The thread of the current (or last) connection, while it runs (it holds itself until it ends). Weak: the
    /// thread holds the handle, which holds the context that holds this.
    private(set) weak var network: (any NetworkThreadControl)?
    /// How many CONNACKs accepted the connection so far.
    private(set) var connections: UInt64 = 0
    /// A loss (or a journal's refusal) waits for ``MQTTClient/allowReconnect()`` before the next reconnect.
    private(set) var awaitingReconnectPermission = false
    /// Whether the current connection's loss is counted already (a journal refused one of its messages).
    private var lossCounted = false
    fileprivate var publishes = LibMosquittoPendingAcks<Void>()
    fileprivate var subscribes = LibMosquittoPendingAcks<MQTTQoS>()
    fileprivate var unsubscribes = LibMosquittoPendingAcks<Void>()
    /// The subscriptions to make again after reconnecting to a broker that lost the session. A filter is added
    /// before its SUBSCRIBE is sent (and put back as it was if that fails), so a reconnect in between keeps it.
    private(set) var activeSubscriptions: [String: ActiveSubscription] = [:]
    private(set) var preparation: Preparation?
    /// SUBSCRIBE and DISCONNECT of a session being prepared went out around libmosquitto.
    private var preparedAroundLibrary = false
    /// The messages read since the journal was last handed them: all from one read phase of the network thread,
    /// whose acknowledgements libmosquitto has queued and not written.
    private var inbound: [MQTTMessage] = []
    /// How many read phases the journal recorded whole, over the client's life (see ``MQTTInboundJournal/record(batch:number:)``).
    private(set) var recordedBatches: UInt64 = 0
    /// The probes written on the current connection and not answered yet, by message id: the batch each follows.
    private var probes: [Int32: UInt64] = [:]
    /// Subscriptions made again by the client itself (after a reconnect), by message id, awaiting their SUBACK.
    private var resubscriptions: [Int32: String] = [:]
    /// Subscriptions the broker refused when they were made again (a cluster electing leaders answers 0x80), asked for
    /// again once due: kept across reconnects, since a broker that kept the session lacks just these.
    private var refusedResubscriptions: [String: (due: ContinuousClock.Instant, attempt: Int)] = [:]
    private var nextSinkID: UInt64 = 0
    private var messageSinks: [UInt64: (filter: MQTTTopicFilter, sink: MessageSink)] = [:]
    private var eventSinks: [UInt64: EventSink] = [:]

    init(reconnection: MQTTReconnection) {
        self.reconnection = reconnection
    }

    // MARK: Reading

    /// Whether a CONNACK accepted the connection and it is up right now.
    var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Whether operations may be queued: connected, or reconnecting after a loss.
    var hasSession: Bool {
        switch phase {
        case .connected, .reconnecting: true
        case .idle, .connecting: false
        }
    }

    /// Whether `connect()` may start.
    var isIdle: Bool {
        if case .idle = phase { return true }
        return false
    }

    /// Whether the network thread may reconnect now: no loss waits for the owner's permission.
    var mayReconnect: Bool { !awaitingReconnectPermission }

    /// What the network thread does next.
    var directive: Directive {
        switch stop {
        case .no: .run(connections: connections)
        case .abruptly: .endAbruptly
        case .cleanly: preparedAroundLibrary ? .awaitBrokerClose : .endCleanly
        }
    }

    /// How many operations await an acknowledgement, by table.
    var pendingCounts: (publishes: Int, subscribes: Int, unsubscribes: Int) {
        (publishes.count, subscribes.count, unsubscribes.count)
    }

    // MARK: Connecting

    /// `connect()` (or `prepareSession`) wants to connect, on `thread`.
    mutating func connectRequested(
        _ waiter: ConnectWaiter, thread: any NetworkThreadControl, preparing: Preparation?
    ) -> [Action] {
        guard isIdle else {
            return [.resumeConnect(waiter, .failure(MQTTError.misuse("connect() called on a client that is already connected")))]
        }
        phase = .connecting(waiter)
        stop = .no
        network = thread
        preparation = preparing
        preparedAroundLibrary = false
        awaitingReconnectPermission = false
        return [.startThread(thread)]
    }

    /// The connection attempt failed before a CONNACK (timeout, cancellation, TLS failure, no thread, no socket),
    /// or `disconnect()` came first: fails a `connect()` still waiting.
    mutating func connectFailed(_ error: any Error) -> [Action] {
        guard case .connecting(let waiter) = phase else { return [] }
        phase = .idle
        return [.resumeConnect(waiter, .failure(error))]
    }

    /// A CONNACK accepted the connection.
    mutating func connackAccepted(sessionPresent: Bool) -> [Action] {
        var waiter: ConnectWaiter?
        switch phase {
        case .connecting(let pending): waiter = pending
        case .connected, .reconnecting: break
        case .idle: return []  // an abandoned connect (timed out, cancelled, disconnected): the thread is stopping
        }
        phase = .connected
        connections += 1
        lossCounted = false
        // Emitted first, so that an event stream made once connect() has returned never sees this connection.
        var actions: [Action] = [.emit(.connected(sessionPresent: sessionPresent), to: Array(eventSinks.values))]
        if let waiter { actions.append(.resumeConnect(waiter, .success(sessionPresent))) }
        if let preparation {
            stop = .cleanly
            actions.append(.prepareSession(preparation))
        } else if !sessionPresent, !activeSubscriptions.isEmpty {
            refusedResubscriptions = [:]
            actions.append(.resubscribe(activeSubscriptions))
        }
        return actions
    }

    /// A CONNACK refused the connection.
    mutating func connackRefused(_ error: MQTTError) -> [Action] {
        switch phase {
        case .connecting(let waiter):
            phase = .idle
            return [.resumeConnect(waiter, .failure(error))]
        case .connected, .reconnecting:
            return [.emit(.connectionLost(reason: error.description), to: Array(eventSinks.values))]
        case .idle:
            return []
        }
    }

    /// The session's SUBSCRIBE and DISCONNECT went out around libmosquitto.
    mutating func preparedSessionAroundLibrary() {
        preparedAroundLibrary = true
    }

    // MARK: Losing the connection

    /// The connection closed: asked for by the client (`requested`), or lost for `reason`. `hint` is added to the
    /// error of a `connect()` still waiting.
    mutating func disconnected(requested: Bool, reason: String, hint: String = "") -> [Action] {
        var actions: [Action] = []
        var lost = false
        switch phase {
        case .connecting(let waiter):
            phase = .idle
            actions.append(.resumeConnect(waiter, .failure(MQTTError.connectionFailed(reason + hint))))
        case .connected, .reconnecting:
            phase = .reconnecting
            lost = true
            if reconnection == .whenAllowed, !lossCounted, !requested { awaitingReconnectPermission = true }
            lossCounted = true
        case .idle:
            break
        }
        // A probe unanswered now is never answered: libmosquitto does not send an UNSUBSCRIBE again after reconnecting;
        // neither is a subscription made again (it is made again at the next CONNACK, or asked for again if refused).
        probes.removeAll()
        for (_, filter) in resubscriptions where refusedResubscriptions[filter] == nil {
            refusedResubscriptions[filter] = (.now, 1)
        }
        resubscriptions.removeAll()
        // What libmosquitto will not send again after reconnecting fails now.
        let failing: [any FailableOwner] =
            publishes.takeFailingOnDisconnect() + subscribes.takeFailingOnDisconnect() + unsubscribes.takeFailingOnDisconnect()
        if !failing.isEmpty { actions.append(.failOperations(failing)) }
        if lost, !requested { actions.append(.emit(.connectionLost(reason: reason), to: Array(eventSinks.values))) }
        return actions
    }

    /// The owner allows a reconnect after every loss so far. A call while connected allows nothing more.
    mutating func allowReconnect() -> [Action] {
        awaitingReconnectPermission = false
        return network.map { [.wake($0)] } ?? []
    }

    // MARK: Messages

    /// libmosquitto read a message (and queued its acknowledgement): it waits for the end of the read phase.
    mutating func messageRead(_ message: MQTTMessage) {
        inbound.append(message)
    }

    /// How many messages wait for the journal.
    var inboundCount: Int { inbound.count }

    /// The read phase ended (or the connection closed): the messages read, for the journal.
    mutating func takeInbound() -> [MQTTMessage] {
        defer { inbound = [] }
        return inbound
    }

    /// The journal (if any) recorded the messages of one read phase, or refused some: `dispositions` holds one per
    /// message, in order (a missing one counts as refused). The recorded ones go to the streams; a refusal drops
    /// the connection before any acknowledgement of the phase is written.
    /// A batch recorded whole is followed by a probe on `probe` when the journal asks for one.
    mutating func received(_ messages: [MQTTMessage], dispositions: [MQTTInboundDisposition], probe: String? = nil) -> [Action] {
        var actions: [Action] = []
        var refused = false
        for (index, message) in messages.enumerated() {
            guard index < dispositions.count, dispositions[index] == .recorded else {
                refused = true
                continue
            }
            let sinks = messageSinks.values.filter { $0.filter.matches(message.topic) }.map(\.sink)
            if !sinks.isEmpty { actions.append(.deliver(message, to: sinks)) }
        }
        if refused {
            // Reconnect only when the owner allows it.
            if !lossCounted { awaitingReconnectPermission = true }
            lossCounted = true
            actions.append(.shutSocket)
        } else {
            recordedBatches += 1
            if let probe { actions.append(.probe(filter: probe, batch: recordedBatches)) }
        }
        return actions
    }

    /// The client made the subscription to `filter` again itself, with message id `mid`.
    mutating func resubscriptionQueued(mid: Int32, filter: String) {
        resubscriptions[mid] = filter
    }

    /// The refused subscriptions due to be asked for again at `now`, while connected.
    mutating func dueResubscriptions(at now: ContinuousClock.Instant) -> [(String, ActiveSubscription)] {
        guard isConnected else { return [] }
        var due: [(String, ActiveSubscription)] = []
        for (filter, entry) in refusedResubscriptions where entry.due <= now {
            guard let subscription = activeSubscriptions[filter] else {
                refusedResubscriptions[filter] = nil
                continue
            }
            // Not due again until its answer: a SUBACK lost with the connection leaves it due after the longest wait.
            refusedResubscriptions[filter]?.due = now + Self.resubscribeDelay(attempt: .max)
            due.append((filter, subscription))
        }
        return due.sorted { $0.0 < $1.0 }
    }

    /// Whether a subscription the client made again was refused and waits to be asked for again.
    var hasRefusedResubscriptions: Bool { !refusedResubscriptions.isEmpty }

    /// The wait before refused subscription's attempt `attempt` (1 for the first retry): 250 ms, doubling, at most 4 s.
    static func resubscribeDelay(attempt: Int) -> Duration {
        MQTTBackoff.resubscription.delay(beforeAttempt: attempt - 1, random: 0)
    }

    /// The probe that follows batch `batch` was queued with message id `mid`.
    mutating func probeQueued(mid: Int32, batch: UInt64) {
        probes[mid] = batch
    }

    // MARK: Operations

    /// The tables, for ``operationQueued(in:mid:failsOnDisconnect:)``.
    static var publishTable: AckTable<Void> { AckTable(keyPath: \.publishes) }
    static var subscribeTable: AckTable<MQTTQoS> { AckTable(keyPath: \.subscribes) }
    static var unsubscribeTable: AckTable<Void> { AckTable(keyPath: \.unsubscribes) }

    /// libmosquitto queued an operation and gave it `mid`: makes its owner, and wakes the network thread to write
    /// it. An owner still holding the same id (more than 65,535 outstanding) can no longer be told apart, and fails.
    mutating func operationQueued<Value: Sendable>(
        in table: AckTable<Value>, mid: Int32, failsOnDisconnect: Bool
    ) -> (ticket: LibMosquittoAckTicket<Value>, actions: [Action]) {
        let (owner, displaced) = self[keyPath: table.keyPath].register(mid, failsOnDisconnect: failsOnDisconnect)
        var actions: [Action] = displaced.map { [.failOperations([$0])] } ?? []
        if let network { actions.append(.wake(network)) }
        return (owner, actions)
    }

    /// A publish was acknowledged (QoS 1, 2) or written (QoS 0), or refused.
    mutating func publishAnswered(mid: Int32, _ result: Result<Void, MQTTError>) -> [Action] {
        publishes.complete(mid).map { [.answerPublish($0, result)] } ?? []
    }

    /// A SUBACK arrived.
    mutating func subscribeAnswered(mid: Int32, _ result: Result<MQTTQoS, MQTTError>, at now: ContinuousClock.Instant = .now) -> [Action] {
        if let filter = resubscriptions.removeValue(forKey: mid) {
            // Made again by the client: a refusal is asked for again later, for as long as the filter is active.
            guard case .failure = result, activeSubscriptions[filter] != nil else {
                refusedResubscriptions[filter] = nil
                return []
            }
            let attempt = (refusedResubscriptions[filter]?.attempt ?? 0) + 1
            refusedResubscriptions[filter] = (now + Self.resubscribeDelay(attempt: attempt), attempt)
            return []
        }
        return subscribes.complete(mid).map { [.answerSubscribe($0, result)] } ?? []
    }

    /// An UNSUBACK arrived.
    mutating func unsubscribeAnswered(mid: Int32) -> [Action] {
        if let batch = probes.removeValue(forKey: mid) { return [.confirm(throughBatch: batch)] }
        return unsubscribes.complete(mid).map { [.answerUnsubscribe($0)] } ?? []
    }

    /// A subscription is about to be made: it is made again after reconnects from now on. Returns the one it replaces.
    mutating func subscribing(to filter: String, _ subscription: ActiveSubscription) -> ActiveSubscription? {
        activeSubscriptions.updateValue(subscription, forKey: filter)
    }

    /// A subscription failed: puts back what `filter` had before.
    mutating func subscribeFailed(_ filter: String, restoring previous: ActiveSubscription?) {
        activeSubscriptions[filter] = previous
    }

    /// An unsubscribe is about to be sent: the filter is not made again after reconnects.
    mutating func unsubscribing(from filter: String) {
        activeSubscriptions[filter] = nil
    }

    // MARK: Streams

    /// Adds a message stream; returns its id.
    mutating func addMessageSink(_ sink: MessageSink, filter: MQTTTopicFilter) -> UInt64 {
        defer { nextSinkID += 1 }
        messageSinks[nextSinkID] = (filter, sink)
        return nextSinkID
    }

    /// Adds an event stream; returns its id.
    mutating func addEventSink(_ sink: EventSink) -> UInt64 {
        defer { nextSinkID += 1 }
        eventSinks[nextSinkID] = sink
        return nextSinkID
    }

    /// A stream was released.
    mutating func removeSink(_ id: UInt64) {
        messageSinks[id] = nil
        eventSinks[id] = nil
    }

    // MARK: Stopping

    /// The client wants the network thread to end (the first request counts). Returns the thread to wake.
    mutating func stopRequested(_ how: Stop) -> (any NetworkThreadControl)? {
        if stop == .no { stop = how }
        return network
    }

    /// After `disconnect()`: fails every waiter and ends every stream.
    mutating func shutDown() -> [Action] {
        var actions = connectFailed(MQTTError.notConnected)
        phase = .idle
        preparation = nil
        let operations: [any FailableOwner] = publishes.takeAll() + subscribes.takeAll() + unsubscribes.takeAll()
        if !operations.isEmpty { actions.append(.failOperations(operations)) }
        actions.append(.endStreams(events: Array(eventSinks.values), messages: messageSinks.values.map(\.sink)))
        eventSinks = [:]
        messageSinks = [:]
        return actions
    }
}
