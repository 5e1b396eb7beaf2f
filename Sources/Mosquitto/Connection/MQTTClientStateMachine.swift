/// All of an ``MQTTClient``'s mutable state, and its transitions, in the manner of mqtt-nio's channel handler and
/// swift-kafka-client's consumer: the phase of the connection is an enum whose cases carry what each phase holds (the
/// `connect()` waiting, the network thread's run), beside what outlives a connection (the subscriptions, the
/// operations awaiting an answer, the streams, two counters, and the messages of the read phase under way).
///
/// Its mutating methods take an event (connect requested, CONNACK, connection closed, an acknowledgement, a
/// message and what the journal did with it, stop requested, …) and return the ``Action``s to take. It does
/// nothing itself: no lock, no libmosquitto, no continuation resumed. ``LibMosquittoContext`` holds it under its
/// mutex (and is the only code that mutates it) and performs the actions after releasing the lock, all in one place
/// (``LibMosquittoContext/perform(_:network:)``).
struct MQTTClientStateMachine {
    /// One of the three tables of operations awaiting an acknowledgement.
    struct AckTable<Value: Sendable> {
        fileprivate let keyPath: WritableKeyPath<MQTTClientStateMachine, LibMosquittoPendingAcks<Value>>
    }

    let reconnection: MQTTReconnection

    /// Where the connection is, and what that phase holds.
    private(set) var state = State.idle(ended: nil)
    /// The subscriptions made, made again after a reconnect to a broker that lost the session.
    private(set) var subscriptions = Subscriptions()
    /// The operations awaiting an acknowledgement: QoS 1 and 2 publishes outlive a connection.
    fileprivate var operations = Operations()
    /// The message and event streams.
    private var streams = Streams()
    /// How many CONNACKs accepted the connection so far.
    private(set) var connections: UInt64 = 0
    /// How many read phases the journal recorded whole, over the client's life (see ``MQTTInboundJournal/record(batch:number:)``).
    private(set) var recordedBatches: UInt64 = 0
    /// The messages read since the journal was last handed them: all from one read phase of the network thread,
    /// whose acknowledgements libmosquitto has queued and not written. Kept outside ``state`` so that a message is
    /// appended in place, without copying the phase's data.
    private var inbound: [MQTTMessage] = []

    init(reconnection: MQTTReconnection) {
        self.reconnection = reconnection
    }

    // MARK: Reading

    /// Whether a CONNACK accepted the connection and it is up right now.
    var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Whether operations may be queued: connected, or reconnecting after a loss.
    var hasSession: Bool {
        switch state {
        case .connected, .reconnecting: true
        case .idle, .connecting: false
        }
    }

    /// Whether `connect()` may start.
    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    /// The network thread's run of the current (or last) `connect()`.
    private var run: NetworkRun? {
        switch state {
        case .idle(let run): run
        case .connecting(let run, _), .connected(let run), .reconnecting(let run): run
        }
    }

    /// The thread of the current (or last) connection, while it runs.
    var network: (any NetworkThreadControl)? { run?.thread }

    /// The session being prepared, if any.
    var preparation: Preparation? { run?.preparation }

    /// Which of the configuration's ``MQTTConfiguration/brokers`` the network thread connects to, or last did.
    var brokerIndex: Int { run?.brokerIndex ?? 0 }

    /// Whether the client wants the network thread to end.
    var stopRequested: Bool { (run?.stop ?? .no) != .no }

    /// Whether the network thread may reconnect now: no loss waits for the owner's permission.
    var mayReconnect: Bool { !(run?.awaitingReconnectPermission ?? false) }

    /// What the network thread does next.
    var directive: Directive {
        switch run?.stop ?? .no {
        case .no: .run(connections: connections)
        case .abruptly: .endAbruptly
        case .cleanly: run?.preparedAroundLibrary == true ? .awaitBrokerClose : .endCleanly
        }
    }

    /// How many operations await an acknowledgement, by table.
    var pendingCounts: (publishes: Int, subscribes: Int, unsubscribes: Int) {
        (operations.publishes.count, operations.subscribes.count, operations.unsubscribes.count)
    }

    /// The active subscriptions.
    var activeSubscriptions: [String: ActiveSubscription] { subscriptions.active }

    // MARK: Connecting

    /// `connect()` (or `prepareSession`) wants to connect, on `thread`.
    mutating func connectRequested(
        _ waiter: ConnectWaiter, thread: any NetworkThreadControl, preparing: Preparation?
    ) -> [Action] {
        switch state {
        case .idle:
            state = .connecting(NetworkRun(thread: thread, preparation: preparing), waiter)
            return [.startThread(thread)]
        case .connecting, .connected, .reconnecting:
            return [.resumeConnect(waiter, .failure(MQTTError.misuse("connect() called on a client that is already connected")))]
        }
    }

    /// The connection attempt failed before a CONNACK (timeout, cancellation, TLS failure, no thread, no socket),
    /// or `disconnect()` came first: fails a `connect()` still waiting.
    mutating func connectFailed(_ error: any Error) -> [Action] {
        switch state {
        case .connecting(let run, let waiter):
            state = .idle(ended: run)
            return [.resumeConnect(waiter, .failure(error))]
        case .idle, .connected, .reconnecting:
            return []
        }
    }

    /// A CONNACK accepted the connection.
    mutating func connackAccepted(sessionPresent: Bool) -> [Action] {
        var run: NetworkRun
        var waiter: ConnectWaiter?
        switch state {
        case .connecting(let current, let pending):
            (run, waiter) = (current, pending)
        case .connected(let current), .reconnecting(let current):
            run = current
        case .idle:
            return []  // an abandoned connect (timed out, cancelled, disconnected): the thread is stopping
        }
        connections += 1
        run.lossCounted = false
        // Emitted first, so that an event stream made once connect() has returned never sees this connection.
        var actions: [Action] = [.emit(.connected(sessionPresent: sessionPresent), to: streams.eventSinks)]
        if let waiter { actions.append(.resumeConnect(waiter, .success(sessionPresent))) }
        if let preparation = run.preparation {
            run.stop = .cleanly
            actions.append(.prepareSession(preparation))
        } else if !sessionPresent, let again = subscriptions.makeAgain() {
            actions.append(.resubscribe(again))
        }
        state = .connected(run)
        return actions
    }

    /// A CONNACK refused the connection.
    mutating func connackRefused(_ error: MQTTError) -> [Action] {
        switch state {
        case .connecting(let run, let waiter):
            state = .idle(ended: run)
            return [.resumeConnect(waiter, .failure(error))]
        case .connected, .reconnecting:
            return [.emit(.connectionLost(reason: error.description), to: streams.eventSinks)]
        case .idle:
            return []
        }
    }

    /// The session's SUBSCRIBE and DISCONNECT went out around libmosquitto.
    mutating func preparedSessionAroundLibrary() {
        modifyRun { $0.preparedAroundLibrary = true }
    }

    /// The network thread tries broker `index` of the configuration's list.
    mutating func tryingBroker(_ index: Int) {
        modifyRun { $0.brokerIndex = index }
    }

    /// The network thread moves on to the next of `count` brokers after a loss; returns its index.
    mutating func nextBroker(of count: Int) -> Int {
        modifyRun { run in
            run.brokerIndex = (run.brokerIndex + 1) % max(count, 1)
            return run.brokerIndex
        } ?? 0
    }

    // MARK: Losing the connection

    /// The connection closed: asked for by the client (`requested`), or lost for `reason`. `hint` is added to the
    /// error of a `connect()` still waiting.
    mutating func disconnected(requested: Bool, reason: String, hint: String = "") -> [Action] {
        // A probe unanswered now is never answered: libmosquitto does not send an UNSUBSCRIBE again after reconnecting;
        // neither is a subscription made again (it is made again at the next CONNACK, or asked for again if refused).
        modifyRun { run in
            run.probes.removeAll()
            run.resumptionProbe = nil
            run.resumptionConfirmed = false
        }
        subscriptions.connectionLost(at: .now)
        var actions: [Action] = []
        var lost = false
        switch state {
        case .connecting(let run, let waiter):
            state = .idle(ended: run)
            actions.append(.resumeConnect(waiter, .failure(MQTTError.connectionFailed(reason + hint))))
        case .connected(var run), .reconnecting(var run):
            if reconnection == .whenAllowed, !run.lossCounted, !requested { run.awaitingReconnectPermission = true }
            run.lossCounted = true
            state = .reconnecting(run)
            lost = true
        case .idle:
            break
        }
        // What libmosquitto will not send again after reconnecting fails now.
        let failing = operations.takeFailingOnDisconnect()
        if !failing.isEmpty { actions.append(.failOperations(failing)) }
        if lost, !requested { actions.append(.emit(.connectionLost(reason: reason), to: streams.eventSinks)) }
        return actions
    }

    /// The owner allows a reconnect after every loss so far. A call while connected allows nothing more.
    mutating func allowReconnect() -> [Action] {
        modifyRun { $0.awaitingReconnectPermission = false }
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
            let sinks = streams.sinks(matching: message.topic)
            if !sinks.isEmpty { actions.append(.deliver(message, to: sinks)) }
        }
        if refused {
            // Reconnect only when the owner allows it.
            modifyRun { run in
                if !run.lossCounted { run.awaitingReconnectPermission = true }
                run.lossCounted = true
            }
            actions.append(.shutSocket)
        } else {
            recordedBatches += 1
            if let probe { actions.append(.probe(filter: probe, batch: recordedBatches)) }
        }
        return actions
    }

    /// The probe that follows batch `batch` was queued with message id `mid`.
    mutating func probeQueued(mid: Int32, batch: UInt64) {
        modifyRun { $0.probes[mid] = batch }
    }

    /// The network thread, resuming after a pause, queued a probe with message id `mid`: what it reads waits for the
    /// answer.
    mutating func resumptionProbeQueued(mid: Int32) {
        modifyRun { run in
            run.resumptionProbe = mid
            run.resumptionConfirmed = false
        }
    }

    /// Whether the broker answered the probe written on resuming, on the current connection.
    var isResumptionConfirmed: Bool {
        switch state {
        case .connected(let run), .reconnecting(let run), .connecting(let run, _), .idle(let run?): run.resumptionConfirmed
        case .idle(nil): false
        }
    }

    // MARK: Subscriptions made again

    /// The client made the subscription to `filter` again itself, with message id `mid`.
    mutating func resubscriptionQueued(mid: Int32, filter: String) {
        subscriptions.madeAgain(filter, mid: mid)
    }

    /// The refused subscriptions due to be asked for again at `now`, while connected.
    mutating func dueResubscriptions(at now: ContinuousClock.Instant) -> [(String, ActiveSubscription)] {
        guard isConnected else { return [] }
        return subscriptions.due(at: now)
    }

    /// Whether a subscription the client made again was refused and waits to be asked for again.
    var hasRefusedResubscriptions: Bool { subscriptions.hasRefusals }

    // MARK: Operations

    /// The tables, for ``operationQueued(in:mid:failsOnDisconnect:)``.
    static var publishTable: AckTable<Void> { AckTable(keyPath: \.operations.publishes) }
    static var subscribeTable: AckTable<MQTTQoS> { AckTable(keyPath: \.operations.subscribes) }
    static var unsubscribeTable: AckTable<Void> { AckTable(keyPath: \.operations.unsubscribes) }

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
        operations.publishes.complete(mid).map { [.answerPublish($0, result)] } ?? []
    }

    /// A SUBACK arrived: for a subscription the client made again itself (a refusal is asked for again later, for as
    /// long as the filter is active), or for a caller's.
    mutating func subscribeAnswered(mid: Int32, _ result: Result<MQTTQoS, MQTTError>, at now: ContinuousClock.Instant = .now) -> [Action] {
        let granted = if case .success = result { true } else { false }
        if subscriptions.answered(mid: mid, granted: granted, at: now) { return [] }
        return operations.subscribes.complete(mid).map { [.answerSubscribe($0, result)] } ?? []
    }

    /// An UNSUBACK arrived: a probe's answer, or a caller's.
    mutating func unsubscribeAnswered(mid: Int32) -> [Action] {
        let resumption = modifyRun { run in
            guard run.resumptionProbe == mid else { return false }
            run.resumptionProbe = nil
            run.resumptionConfirmed = true
            return true
        }
        if resumption == true { return [] }
        if let batch = modifyRun({ $0.probes.removeValue(forKey: mid) }) ?? nil { return [.confirm(throughBatch: batch)] }
        return operations.unsubscribes.complete(mid).map { [.answerUnsubscribe($0)] } ?? []
    }

    /// A subscription is about to be made: it is made again after reconnects from now on. Returns the one it replaces.
    mutating func subscribing(to filter: String, _ subscription: ActiveSubscription) -> ActiveSubscription? {
        subscriptions.subscribing(to: filter, subscription)
    }

    /// A subscription failed: puts back what `filter` had before.
    mutating func subscribeFailed(_ filter: String, restoring previous: ActiveSubscription?) {
        subscriptions.failed(filter, restoring: previous)
    }

    /// An unsubscribe is about to be sent: the filter is not made again after reconnects.
    mutating func unsubscribing(from filter: String) {
        subscriptions.unsubscribing(from: filter)
    }

    // MARK: Streams

    /// Adds a message stream; returns its id.
    mutating func addMessageSink(_ sink: MessageSink, filter: MQTTTopicFilter) -> UInt64 {
        streams.add(sink, filter: filter)
    }

    /// Adds an event stream; returns its id.
    mutating func addEventSink(_ sink: EventSink) -> UInt64 {
        streams.add(sink)
    }

    /// A stream was released.
    mutating func removeSink(_ id: UInt64) {
        streams.remove(id)
    }

    // MARK: Stopping

    /// The client wants the network thread to end (the first request counts). Returns the thread to wake.
    mutating func stopRequested(_ how: Stop) -> (any NetworkThreadControl)? {
        modifyRun { run in
            if run.stop == .no { run.stop = how }
            return run.thread
        } ?? nil
    }

    /// After `disconnect()`: fails every waiter and ends every stream.
    mutating func shutDown() -> [Action] {
        var actions = connectFailed(MQTTError.notConnected)
        var ended = run
        ended?.preparation = nil
        state = .idle(ended: ended)
        let owners = operations.takeAll()
        if !owners.isEmpty { actions.append(.failOperations(owners)) }
        actions.append(streams.endAll())
        return actions
    }

    // MARK: Changing the run

    /// Hands the network thread's run to `body` to change, in whichever phase holds it; `nil` before the first
    /// `connect()`.
    private mutating func modifyRun<Result>(_ body: (inout NetworkRun) -> Result) -> Result? {
        switch state {
        case .idle(nil):
            return nil
        case .idle(var run?):
            defer { state = .idle(ended: run) }
            return body(&run)
        case .connecting(var run, let waiter):
            defer { state = .connecting(run, waiter) }
            return body(&run)
        case .connected(var run):
            defer { state = .connected(run) }
            return body(&run)
        case .reconnecting(var run):
            defer { state = .reconnecting(run) }
            return body(&run)
        }
    }
}
