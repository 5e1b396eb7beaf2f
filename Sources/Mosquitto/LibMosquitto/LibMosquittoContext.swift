import CMosquitto
import Logging
import Synchronization

/// What libmosquitto's callbacks reach through their `userdata` pointer: the client's state machine
/// (``MQTTClientStateMachine``) under a lock, and the journal.
///
/// The only code that mutates the client's state. Each method takes the lock, hands the machine one event, and
/// performs the actions it returns after the lock is released (``perform(_:network:)``, the one place every action
/// is handled: continuations resumed, streams yielded to, the network thread started or woken), so that no Swift code
/// runs under the lock and the network thread never waits on Swift code. The events of the network thread pass it
/// (``LibMosquittoThreadActions``) for the actions that need the libmosquitto handle or the journal.
///
/// The journal is called once per read phase (``MQTTInboundJournal/record(batch:number:)``) and once per probe
/// answered (``MQTTInboundJournal/confirmed(throughBatch:)``); its probe filter is read once, here.
///
/// Threads: the callbacks run on the client's network thread; the other methods on whatever thread the client's
/// caller is on.
final class LibMosquittoContext: Sendable {
    typealias Action = MQTTClientStateMachine.Action

    private let state: Mutex<MQTTClientStateMachine>
    let journal: (any MQTTInboundJournal)?
    /// The journal's probe filter (``MQTTInboundJournal/confirmationProbe``).
    let probe: String?
    /// Asked by the network thread whether the process may still write (``MQTTWriteGate``).
    let writeGate: (any MQTTWriteGate)?
    let protocolVersion: MQTTProtocolVersion
    /// Where libmosquitto's own log goes (``LibMosquittoCallbacks``), at matching levels.
    let logger: Logger

    init(
        journal: (any MQTTInboundJournal)?, writeGate: (any MQTTWriteGate)? = nil, protocolVersion: MQTTProtocolVersion,
        reconnection: MQTTReconnection, logger: Logger
    ) {
        self.state = Mutex(MQTTClientStateMachine(reconnection: reconnection))
        self.journal = journal
        self.writeGate = writeGate
        self.probe = journal?.confirmationProbe
        self.protocolVersion = protocolVersion
        self.logger = logger
    }

    // MARK: Reading

    /// Whether the client is connected right now.
    var isConnected: Bool { state.withLock { $0.isConnected } }

    /// How many connections the broker has accepted (CONNACKs) since the client was made.
    var connectionCount: UInt64 { state.withLock { $0.connections } }

    /// The active subscriptions and their QoS.
    var subscriptions: [String: MQTTQoS] { state.withLock { $0.activeSubscriptions.mapValues(\.qos) } }

    /// Whether `connect()` may start, and the thread of the previous connection (to wait for).
    var connectCheck: (idle: Bool, previous: (any NetworkThreadControl)?) { state.withLock { ($0.isIdle, $0.network) } }

    /// What the network thread does next.
    var directive: MQTTClientStateMachine.Directive { state.withLock { $0.directive } }

    /// Whether the client wants the network thread to end.
    var stopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Which of the configuration's ``MQTTConfiguration/brokers`` the network thread connects to, or last did.
    var brokerIndex: Int { state.withLock { $0.brokerIndex } }

    /// Whether the network thread may reconnect now.
    var mayReconnect: Bool { state.withLock { $0.mayReconnect } }

    // MARK: Called by the client

    /// Starts connecting on `thread`, or fails `waiter` (a client that is not idle).
    func connect(_ waiter: ConnectWaiter, on thread: any NetworkThreadControl, preparing: MQTTClientStateMachine.Preparation?) {
        transition { $0.connectRequested(waiter, thread: thread, preparing: preparing) }
    }

    /// Fails a `connect()` still waiting, with `error`.
    func failConnecting(_ error: any Error) {
        transition { $0.connectFailed(error) }
    }

    /// The owner allows a reconnect after every loss so far; wakes the network thread.
    func allowReconnect() {
        transition { $0.allowReconnect() }
    }

    /// Tells the network thread to end (the first request counts); returns it.
    func requestStop(_ how: MQTTClientStateMachine.Stop) -> (any NetworkThreadControl)? {
        state.withLock { $0.stopRequested(how) }
    }

    /// After `disconnect()`: fails every waiter and ends every stream.
    func shutDown() {
        transition { $0.shutDown() }
    }

    /// Runs `call`, the libmosquitto call that queues an operation and assigns its message id, and makes the
    /// operation's owner in `table`, all under the lock, so that its acknowledgement (whose callback takes the
    /// same lock) cannot come first.
    /// - Parameters:
    ///   - queuedWhileDisconnected: Whether `MOSQ_ERR_NO_CONN` means queued (a QoS 1 or 2 publish, which
    ///     libmosquitto keeps and sends after reconnecting) rather than failed.
    /// - Throws: ``MQTTError/notConnected`` before `connect()` has succeeded or after `disconnect()`; what
    ///   libmosquitto's call returned.
    func register<Value: Sendable>(
        in table: MQTTClientStateMachine.AckTable<Value>, failsOnDisconnect: Bool, queuedWhileDisconnected: Bool = false,
        _ call: (inout Int32) -> Int32
    ) throws(MQTTError) -> LibMosquittoAckTicket<Value> {
        try queue(in: table, failsOnDisconnect: failsOnDisconnect, queuedWhileDisconnected: queuedWhileDisconnected, call)
    }

    /// As ``register(in:failsOnDisconnect:queuedWhileDisconnected:_:)``, for a SUBSCRIBE: the filter is made an active
    /// subscription in the same critical section. Returns the owner and the subscription it replaced.
    func subscribe(
        to filter: String, _ subscription: MQTTClientStateMachine.ActiveSubscription, _ call: (inout Int32) -> Int32
    ) throws(MQTTError) -> (ticket: LibMosquittoAckTicket<MQTTQoS>, previous: MQTTClientStateMachine.ActiveSubscription?) {
        var previous: MQTTClientStateMachine.ActiveSubscription?
        let ticket = try queue(
            in: MQTTClientStateMachine.subscribeTable, failsOnDisconnect: true, call,
            before: { previous = $0.subscribing(to: filter, subscription) },
            undo: { $0.subscribeFailed(filter, restoring: previous) })
        return (ticket, previous)
    }

    /// A subscription failed after it was sent: puts back what `filter` had before.
    func subscribeFailed(_ filter: String, restoring previous: MQTTClientStateMachine.ActiveSubscription?) {
        state.withLock { $0.subscribeFailed(filter, restoring: previous) }
    }

    /// As ``register(in:failsOnDisconnect:queuedWhileDisconnected:_:)``, for an UNSUBSCRIBE: the filter stops being
    /// an active subscription in the same critical section.
    func unsubscribe(from filter: String, _ call: (inout Int32) -> Int32) throws(MQTTError) -> LibMosquittoAckTicket<Void> {
        try queue(in: MQTTClientStateMachine.unsubscribeTable, failsOnDisconnect: true, call, before: { $0.unsubscribing(from: filter) })
    }

    private func queue<Value: Sendable>(
        in table: MQTTClientStateMachine.AckTable<Value>, failsOnDisconnect: Bool, queuedWhileDisconnected: Bool = false,
        _ call: (inout Int32) -> Int32, before: (inout MQTTClientStateMachine) -> Void = { _ in },
        undo: (inout MQTTClientStateMachine) -> Void = { _ in }
    ) throws(MQTTError) -> LibMosquittoAckTicket<Value> {
        let (result, actions) = state.withLock { machine -> (Result<LibMosquittoAckTicket<Value>, MQTTError>, [Action]) in
            guard machine.hasSession else { return (.failure(.notConnected), []) }
            before(&machine)
            var mid: Int32 = 0
            let code = call(&mid)
            guard code == MOSQ_ERR_SUCCESS.rawValue || (queuedWhileDisconnected && code == MOSQ_ERR_NO_CONN.rawValue) else {
                undo(&machine)
                return (.failure(LibMosquittoLibrary.error(code)), [])
            }
            let (ticket, actions) = machine.operationQueued(in: table, mid: mid, failsOnDisconnect: failsOnDisconnect)
            return (.success(ticket), actions)
        }
        Self.perform(actions, network: nil)
        return try result.get()
    }

    // MARK: Streams

    /// A stream of the messages whose topic matches `filter`, until `shutDown()`.
    func addMessageSink(filter: MQTTTopicFilter) -> AsyncStream<MQTTMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTMessage.self, bufferingPolicy: .unbounded)
        let id = state.withLock { $0.addMessageSink(continuation, filter: filter) }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { $0.removeSink(id) } }
        return stream
    }

    /// A stream of connection events, until `shutDown()`.
    func addEventSink() -> AsyncStream<MQTTConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTConnectionEvent.self, bufferingPolicy: .unbounded)
        let id = state.withLock { $0.addEventSink(continuation) }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { $0.removeSink(id) } }
        return stream
    }

    // MARK: Called on the network thread

    /// A CONNACK arrived. Returns what the callback does with the handle: resubscribe, or prepare the session.
    func connected(reasonCode: Int32, sessionPresent: Bool, network: some NetworkThreadActions) {
        guard reasonCode == 0 else {
            let error = MQTTError.connectionRefused(reasonCode: Int(reasonCode), reason: Self.connackText(reasonCode, protocolVersion))
            transition { $0.connackRefused(error) }
            return
        }
        transition(network: network) { $0.connackAccepted(sessionPresent: sessionPresent) }
    }

    /// The network thread tries broker `index` of the list.
    func tryingBroker(_ index: Int) {
        state.withLock { $0.tryingBroker(index) }
    }

    /// The network thread moves on to the next of `count` brokers; returns its index.
    func nextBroker(of count: Int) -> Int {
        state.withLock { $0.nextBroker(of: count) }
    }

    /// The session's SUBSCRIBE and DISCONNECT were written around libmosquitto.
    func preparedSessionAroundLibrary() {
        state.withLock { $0.preparedSessionAroundLibrary() }
    }

    /// The connection closed; `reasonCode` 0 means the client asked for it. libmosquitto passes one of its own error
    /// codes (small numbers: the connection was lost, a protocol error) or, when the broker sent an MQTT 5 DISCONNECT, that
    /// packet's reason code (0x80 and up: "Session taken over", "Not authorized"), which is named as the broker's reason.
    func disconnected(reasonCode: Int32) {
        let reason = reasonCode == 0 ? "disconnected" : LibMosquittoLibrary.disconnectReason(reasonCode)
        // A broker that speaks only 3.1.1 may close the connection at a v5 CONNECT without answering.
        let hint = protocolVersion == .v5 ? " (the broker closed it without accepting MQTT 5: if it speaks only 3.1.1, connect with 3.1.1)" : ""
        transition { $0.disconnected(requested: reasonCode == 0, reason: reason, hint: hint) }
    }

    /// A publish was acknowledged (QoS 1, 2) or written (QoS 0). The refusal names no topic; the publishing side
    /// fills it in.
    func published(mid: Int32, reasonCode: Int32) {
        let result: Result<Void, MQTTError> =
            cmosquitto_reason_is_failure(reasonCode)
            ? .failure(.publishRefused(topic: "", reasonCode: Int(reasonCode), reason: LibMosquittoLibrary.reasonText(reasonCode)))
            : .success(())
        transition { $0.publishAnswered(mid: mid, result) }
    }

    /// A SUBACK arrived. A refusal names no filter; the subscribing side fills it in.
    func subscribed(mid: Int32, grantedQoS: Int32) {
        let result: Result<MQTTQoS, MQTTError> =
            MQTTQoS(rawValue: grantedQoS).map { .success($0) }
            ?? .failure(.subscribeRefused(filter: "", reasonCode: Int(grantedQoS), reason: LibMosquittoLibrary.reasonText(grantedQoS)))
        transition { $0.subscribeAnswered(mid: mid, result) }
    }

    /// An UNSUBACK arrived: a caller's, or a probe's, whose answer goes to the journal.
    func unsubscribed(mid: Int32, network: some NetworkThreadActions) {
        transition(network: network) { $0.unsubscribeAnswered(mid: mid) }
    }

    /// libmosquitto read a message: it waits for the end of the read phase (``journalInbound()``).
    func messageRead(_ message: MQTTMessage) {
        state.withLock { $0.messageRead(message) }
    }

    /// How many messages read wait for the journal.
    var inboundCount: Int { state.withLock { $0.inboundCount } }

    /// Forgets the messages read and not yet journaled: their connection ended before any acknowledgement of them
    /// could be written, so the broker delivers them again.
    func discardInbound() {
        _ = state.withLock { $0.takeInbound() }
    }

    /// The read phase ended, or the connection closed: the journal (if any) records the messages read, as one batch,
    /// outside the lock — its one call of the phase; the recorded ones go to the streams, and a batch recorded whole is
    /// followed by the journal's probe. When the journal refused one, the socket is shut before any acknowledgement
    /// is written, and this returns `true`.
    func journalInbound(network: (any NetworkThreadActions)?) -> Bool {
        let (messages, number) = state.withLock { ($0.takeInbound(), $0.recordedBatches + 1) }
        guard !messages.isEmpty else { return false }
        let dispositions = journal?.record(batch: messages, number: number) ?? messages.map { _ in .recorded }
        let actions = transition(network: network) { $0.received(messages, dispositions: dispositions, probe: probe) }
        return actions.contains { if case .shutSocket = $0 { true } else { false } }
    }

    /// The client made a subscription again itself (after a reconnect), with message id `mid` (on the network thread).
    func resubscriptionQueued(mid: Int32, filter: String) {
        state.withLock { $0.resubscriptionQueued(mid: mid, filter: filter) }
    }

    /// The subscriptions the broker refused when made again, due to be asked for again now (on the network thread).
    func dueResubscriptions() -> [(String, MQTTClientStateMachine.ActiveSubscription)] {
        // Every loop turn: the clock is read only when a refusal waits.
        state.withLock { $0.hasRefusedResubscriptions ? $0.dueResubscriptions(at: .now) : [] }
    }

    /// The probe written on resuming after a pause was queued with message id `mid` (on the network thread).
    func resumptionProbeQueued(mid: Int32) {
        state.withLock { $0.resumptionProbeQueued(mid: mid) }
    }

    /// Whether the broker answered the probe written on resuming, on the current connection.
    var isResumptionConfirmed: Bool { state.withLock { $0.isResumptionConfirmed } }

    /// The probe that follows batch `batch` was queued with message id `mid` (on the network thread, before it is written).
    func probeQueued(mid: Int32, batch: UInt64) {
        state.withLock { $0.probeQueued(mid: mid, batch: batch) }
    }

    // MARK: Performing

    /// Hands the machine one event under the lock, then performs what it returns, with `network` for the actions that
    /// need the network thread; returns the actions.
    @discardableResult
    private func transition(
        network: (any NetworkThreadActions)? = nil, _ event: (inout MQTTClientStateMachine) -> [Action]
    ) -> [Action] {
        let actions = state.withLock { event(&$0) }
        Self.perform(actions, network: network)
        return actions
    }

    /// Performs `actions` in order, outside the lock: the one place every action of the machine is handled. Those that
    /// need the libmosquitto handle or the journal go to `network`, which the events of the network thread pass (the
    /// machine returns such actions from those events only).
    static func perform(_ actions: [Action], network: (any NetworkThreadActions)?) {
        for action in actions {
            switch action {
            case .resumeConnect(let waiter, let result): waiter.resume(with: result)
            case .emit(let event, let sinks): for sink in sinks { sink.yield(event) }
            case .deliver(let message, let sinks): for sink in sinks { sink.yield(message) }
            case .answerPublish(let ticket, let result): ticket.finish(result)
            case .answerSubscribe(let ticket, let result): ticket.finish(result)
            case .answerUnsubscribe(let ticket): ticket.finish(.success(()))
            case .failOperations(let owners): for owner in owners { owner.fail(with: .notConnected) }
            case .endStreams(let events, let messages):
                for sink in events {
                    sink.yield(.disconnected)
                    sink.finish()
                }
                for sink in messages { sink.finish() }
            case .startThread(let thread): thread.start()
            case .wake(let thread): thread.wake()
            case .resubscribe(let subscriptions): network?.resubscribe(subscriptions.map { ($0.key, $0.value) })
            case .prepareSession(let preparation): network?.prepareSession(preparation)
            case .shutSocket: network?.shutSocket()
            case .probe(let filter, let batch): network?.probe(filter: filter, after: batch)
            case .confirm(let batch): network?.confirm(throughBatch: batch)
            }
        }
    }

    private static func connackText(_ code: Int32, _ version: MQTTProtocolVersion) -> String {
        guard version == .v311 else { return LibMosquittoLibrary.reasonText(code) }
        return String(cString: mosquitto_connack_string(code))
    }
}

/// The owner of an operation of any value type, as something that can be failed.
protocol FailableOwner: Sendable {
    func fail(with error: MQTTError)
}

extension LibMosquittoAckTicket: FailableOwner {
    func fail(with error: MQTTError) { finish(.failure(error)) }
}
