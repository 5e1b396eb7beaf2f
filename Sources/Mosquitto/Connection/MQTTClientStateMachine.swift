/// The `connect()` call waiting for the first CONNACK.
typealias ConnectWaiter = CheckedContinuation<Bool, any Error>
/// A stream made by ``MQTTClient/messages(matching:)``.
typealias MessageSink = AsyncStream<MQTTMessage>.Continuation
/// A stream made by ``MQTTClient/connectionEvents()``.
typealias EventSink = AsyncStream<MQTTConnectionEvent>.Continuation

/// What the state machine knows of the thread that runs a connection (``LibMosquittoNetworkThread``).
protocol NetworkThreadControl: AnyObject, Sendable {
    /// Starts it.
    func start()
    /// Cuts a wait of the thread short, so that it looks at the state again.
    func wake()
    /// Waits until it has ended, or `timeout` has passed; returns whether it has ended.
    @discardableResult func waitForEnd(within timeout: Duration) async -> Bool
}

/// All of an ``MQTTClient``'s mutable state, and its transitions: the phase of the connection, the stop request,
/// the reconnect permission, the operations awaiting acknowledgement, the active subscriptions, the session
/// being prepared and the streams.
///
/// Its mutating methods take an event (connect requested, CONNACK, connection closed, an acknowledgement, a
/// message and what the journal did with it, stop requested, …) and return the ``Action``s to take. It does
/// nothing itself: no lock, no libmosquitto, no continuation resumed. ``LibMosquittoContext`` holds it under its
/// mutex (and is the only code that mutates it) and performs the actions after releasing the lock.
struct MQTTClientStateMachine {
    /// Where the connection is.
    enum Phase {
        /// Not connected and not trying: before `connect()`, after `disconnect()`, or after a failed connect.
        case idle
        /// `connect()` waits for the first CONNACK.
        case connecting(ConnectWaiter)
        /// Connected: a CONNACK accepted the connection.
        case connected
        /// Connected once, then lost; the network thread reconnects (when allowed).
        case reconnecting
    }

    /// What the network thread is told to do.
    enum Stop: Equatable {
        /// Keep the connection, reconnecting after a loss.
        case no
        /// Disconnect cleanly (DISCONNECT, no will) and end.
        case cleanly
        /// End at once without DISCONNECT, as if the process had died: the broker sends the will.
        case abruptly
    }

    /// What the network thread does next (``directive``).
    enum Directive: Equatable {
        /// Run the connection; `connections` counts the CONNACKs so far (the backoff starts afresh after one).
        case run(connections: UInt64)
        /// End without DISCONNECT.
        case endAbruptly
        /// Send DISCONNECT after what is queued, and end.
        case endCleanly
        /// SUBSCRIBE and DISCONNECT went out around libmosquitto: wait for the broker to close, and end.
        case awaitBrokerClose
    }

    /// A subscription as made, to make again after a reconnect.
    struct ActiveSubscription: Sendable, Equatable {
        var qos: MQTTQoS
        /// The options byte as sent (0 on a 3.1.1 connection).
        var options: Int32
    }

    /// A session being prepared (``MQTTClient/prepareSession(subscribingTo:qos:)``): on CONNACK, subscribe to
    /// `filter` and disconnect at once, before any queued message is read.
    struct Preparation: Sendable, Equatable {
        var filter: String
        var qos: MQTTQoS
        /// Whether SUBSCRIBE and DISCONNECT can be written straight to the socket (not over TLS).
        var plainTCP: Bool
    }

    /// What to do after a transition, in order, outside the lock.
    enum Action: Sendable {
        /// Resume `connect()`.
        case resumeConnect(ConnectWaiter, Result<Bool, any Error>)
        /// Yield `event` to these event streams.
        case emit(MQTTConnectionEvent, to: [EventSink])
        /// Yield `message` to these message streams.
        case deliver(MQTTMessage, to: [MessageSink])
        /// Hand a publish its answer.
        case answerPublish(LibMosquittoAckTicket<Void>, Result<Void, MQTTError>)
        /// Hand a subscribe its answer.
        case answerSubscribe(LibMosquittoAckTicket<MQTTQoS>, Result<MQTTQoS, MQTTError>)
        /// Hand an unsubscribe its answer.
        case answerUnsubscribe(LibMosquittoAckTicket<Void>)
        /// Fail these operations with ``MQTTError/notConnected``.
        case failOperations([any FailableOwner])
        /// Yield ``MQTTConnectionEvent/disconnected`` to these event streams and end them, and end these message streams.
        case endStreams(events: [EventSink], messages: [MessageSink])
        /// Start this network thread.
        case startThread(any NetworkThreadControl)
        /// Wake this network thread.
        case wake(any NetworkThreadControl)
        /// On the network thread, in the CONNACK callback: make these subscriptions again.
        case resubscribe([String: ActiveSubscription])
        /// On the network thread, in the CONNACK callback: subscribe and disconnect at once.
        case prepareSession(Preparation)
        /// On the network thread, in the message callback: shut the socket, so that the acknowledgement
        /// libmosquitto has queued is never written.
        case shutSocket
    }

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

    /// A message arrived and the journal (if any) recorded it, or refused it.
    mutating func received(_ message: MQTTMessage, disposition: MQTTInboundDisposition) -> [Action] {
        switch disposition {
        case .refused:
            // Drop the connection before the acknowledgement is written; reconnect only when the owner allows it.
            if !lossCounted { awaitingReconnectPermission = true }
            lossCounted = true
            return [.shutSocket]
        case .recorded:
            let sinks = messageSinks.values.filter { $0.filter.matches(message.topic) }.map(\.sink)
            return sinks.isEmpty ? [] : [.deliver(message, to: sinks)]
        }
    }

    // MARK: Operations

    /// The tables, for ``operationQueued(in:mid:failsOnDisconnect:)``.
    static var publishTable: AckTable<Void> { AckTable(keyPath: \.publishes) }
    static var subscribeTable: AckTable<MQTTQoS> { AckTable(keyPath: \.subscribes) }
    static var unsubscribeTable: AckTable<Void> { AckTable(keyPath: \.unsubscribes) }

    /// libmosquitto queued an operation and gave it `mid`: makes its owner. An owner still holding the same id
    /// (more than 65,535 outstanding) can no longer be told apart, and fails.
    mutating func operationQueued<Value: Sendable>(
        in table: AckTable<Value>, mid: Int32, failsOnDisconnect: Bool
    ) -> (ticket: LibMosquittoAckTicket<Value>, actions: [Action]) {
        let (owner, displaced) = self[keyPath: table.keyPath].register(mid, failsOnDisconnect: failsOnDisconnect)
        return (owner, displaced.map { [.failOperations([$0])] } ?? [])
    }

    /// A publish was acknowledged (QoS 1, 2) or written (QoS 0), or refused.
    mutating func publishAnswered(mid: Int32, _ result: Result<Void, MQTTError>) -> [Action] {
        publishes.complete(mid).map { [.answerPublish($0, result)] } ?? []
    }

    /// A SUBACK arrived.
    mutating func subscribeAnswered(mid: Int32, _ result: Result<MQTTQoS, MQTTError>) -> [Action] {
        subscribes.complete(mid).map { [.answerSubscribe($0, result)] } ?? []
    }

    /// An UNSUBACK arrived.
    mutating func unsubscribeAnswered(mid: Int32) -> [Action] {
        unsubscribes.complete(mid).map { [.answerUnsubscribe($0)] } ?? []
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
