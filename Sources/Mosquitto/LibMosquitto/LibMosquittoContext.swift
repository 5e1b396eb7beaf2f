import CMosquitto
import Logging
import Synchronization

/// What libmosquitto's callbacks reach through their `userdata` pointer: the waiters, the active
/// subscriptions and the message and event streams of one client.
///
/// Threads: the callbacks (``LibMosquittoCallbacks``) run on libmosquitto's network thread; the other
/// methods run on whatever thread the client's caller is on. Everything mutable sits behind `state`;
/// continuations are taken out under the lock and resumed or yielded to after it is released, so the
/// network thread never waits on Swift code.
final class LibMosquittoContext: Sendable {
    enum Phase: Sendable {
        /// Not connected and not trying: before `connect()`, or after `disconnect()`.
        case idle
        /// `connect()` is waiting for the first CONNACK.
        case connecting(CheckedContinuation<Bool, any Error>)
        /// Connected, or reconnecting by itself after a loss.
        case online(connected: Bool)
    }

    /// What the network thread (``LibMosquittoNetworkThread``) is told to do.
    enum NetworkStop: Sendable {
        /// Keep the connection, reconnecting after a loss.
        case no
        /// Disconnect cleanly (DISCONNECT, no will) and end.
        case cleanly
        /// End at once without DISCONNECT, as if the process had died: the broker sends the will.
        case abruptly
    }

    /// A subscription as made, to make again after a reconnect.
    struct ActiveSubscription: Sendable {
        var qos: MQTTQoS
        /// The options byte as sent (0 on a 3.1.1 connection).
        var options: Int32
    }

    struct State {
        var phase = Phase.idle
        var stop = NetworkStop.no
        /// How many CONNACKs accepted the connection so far: the network thread starts its backoff afresh after one.
        var connections: UInt64 = 0
        var publishes = LibMosquittoPendingAcks<Void>()
        var subscribes = LibMosquittoPendingAcks<MQTTQoS>()
        var unsubscribes = LibMosquittoPendingAcks<Void>()
        /// The subscriptions to make again after reconnecting to a broker that lost the session. A filter is
        /// added before its SUBSCRIBE is sent (and removed if refused), so a reconnect in between keeps it.
        var activeSubscriptions: [String: ActiveSubscription] = [:]
        /// Set by ``MQTTClient/prepareSession(subscribingTo:qos:)``: on CONNACK, subscribe to this and disconnect
        /// at once, before any queued message is read.
        var preparing: (filter: String, qos: MQTTQoS, plainTCP: Bool)?
        /// The session was prepared with packets written around libmosquitto: the network thread waits for the
        /// broker to close the connection, touching nothing through libmosquitto.
        var preparedAroundLibrary = false
        /// Connections lost (or dropped by a journal's refusal) that need the owner's permission to be made again.
        var lossesAwaitingPermission: UInt64 = 0
        /// The losses the owner has allowed a reconnect after (``MQTTClient/allowReconnect()``).
        var lossesPermitted: UInt64 = 0
        /// Whether the current connection's loss is counted already (a journal refused one of its messages).
        var lossCounted = false
        var nextSinkID: UInt64 = 0
        var messageSinks: [UInt64: (filter: MQTTTopicFilter, sink: AsyncStream<MQTTMessage>.Continuation)] = [:]
        var eventSinks: [UInt64: AsyncStream<MQTTConnectionEvent>.Continuation] = [:]
    }

    let state = Mutex(State())
    let journal: (any MQTTInboundJournal)?
    let protocolVersion: MQTTProtocolVersion
    let reconnection: MQTTReconnection
    /// Where libmosquitto's own log goes (``LibMosquittoCallbacks``), at matching levels.
    let logger: Logger

    init(journal: (any MQTTInboundJournal)?, protocolVersion: MQTTProtocolVersion, reconnection: MQTTReconnection, logger: Logger) {
        self.journal = journal
        self.protocolVersion = protocolVersion
        self.reconnection = reconnection
        self.logger = logger
    }

    /// Whether the network thread may reconnect now: no loss waits for the owner's permission.
    var mayReconnect: Bool { state.withLock { $0.lossesPermitted >= $0.lossesAwaitingPermission } }

    /// The owner allows a reconnect after every loss so far.
    func allowReconnect() { state.withLock { $0.lossesPermitted = $0.lossesAwaitingPermission } }

    // MARK: Called on the network thread

    /// A CONNACK arrived. Returns the subscriptions to make again (the broker had no session for us).
    func connected(reasonCode: Int32, sessionPresent: Bool) -> [String: ActiveSubscription] {
        if reasonCode != 0 {
            let error = MQTTError.connectionRefused(
                reasonCode: Int(reasonCode), reason: Self.connackText(reasonCode, protocolVersion))
            let waiter: CheckedContinuation<Bool, any Error>? = state.withLock { state in
                guard case .connecting(let waiter) = state.phase else { return nil }
                state.phase = .idle
                return waiter
            }
            waiter?.resume(throwing: error)
            if waiter == nil { emit(.connectionLost(reason: error.description)) }
            return [:]
        }
        let (waiter, resubscribe) = state.withLock { state -> (CheckedContinuation<Bool, any Error>?, [String: ActiveSubscription]) in
            var waiter: CheckedContinuation<Bool, any Error>?
            if case .connecting(let pending) = state.phase { waiter = pending }
            state.phase = .online(connected: true)
            state.connections += 1
            state.lossCounted = false
            return (waiter, sessionPresent ? [:] : state.activeSubscriptions)
        }
        // Emitted first, so that an event stream made once connect() has returned never sees this connection.
        emit(.connected(sessionPresent: sessionPresent))
        waiter?.resume(returning: sessionPresent)
        return resubscribe
    }

    /// The connection closed; `reasonCode` 0 means the client asked for it.
    func disconnected(reasonCode: Int32) {
        let reason = reasonCode == 0 ? "disconnected" : LibMosquittoLibrary.errorText(reasonCode)
        let (waiter, failing, lost) = state.withLock { state in
            var waiter: CheckedContinuation<Bool, any Error>?
            var lost = false
            switch state.phase {
            case .connecting(let pending):
                waiter = pending
                state.phase = .idle
            case .online:
                state.phase = .online(connected: false)
                lost = true
                if reconnection == .whenAllowed, !state.lossCounted, reasonCode != 0 { state.lossesAwaitingPermission += 1 }
                state.lossCounted = true
            case .idle:
                break
            }
            // What libmosquitto will not send again after reconnecting fails now.
            let failing: [any FailableOwner] =
                state.publishes.takeFailingOnDisconnect() + state.subscribes.takeFailingOnDisconnect()
                + state.unsubscribes.takeFailingOnDisconnect()
            return (waiter, failing, lost)
        }
        // A broker that speaks only 3.1.1 may close the connection at a v5 CONNECT without answering.
        let hint = protocolVersion == .v5 ? " (the broker closed it without accepting MQTT 5: if it speaks only 3.1.1, connect with 3.1.1)" : ""
        waiter?.resume(throwing: MQTTError.connectionFailed(reason + hint))
        for pending in failing { pending.fail(with: MQTTError.notConnected) }
        if lost, reasonCode != 0 { emit(.connectionLost(reason: reason)) }
    }

    /// A publish was acknowledged (QoS 1, 2) or written (QoS 0). The refusal names no topic; the
    /// publishing side fills it in.
    func published(mid: Int32, reasonCode: Int32) {
        let result: Result<Void, MQTTError> =
            cmosquitto_reason_is_failure(reasonCode)
            ? .failure(.publishRefused(topic: "", reasonCode: Int(reasonCode), reason: LibMosquittoLibrary.reasonText(reasonCode)))
            : .success(())
        state.withLock { $0.publishes.complete(mid) }?.finish(result)
    }

    /// A SUBACK arrived. A refusal names no filter; the subscribing side fills it in.
    func subscribed(mid: Int32, grantedQoS: Int32) {
        let result: Result<MQTTQoS, MQTTError> =
            MQTTQoS(rawValue: grantedQoS).map { .success($0) }
            ?? .failure(.subscribeRefused(filter: "", reasonCode: Int(grantedQoS), reason: LibMosquittoLibrary.reasonText(grantedQoS)))
        state.withLock { $0.subscribes.complete(mid) }?.finish(result)
    }

    func unsubscribed(mid: Int32) {
        state.withLock { $0.unsubscribes.complete(mid) }?.finish(.success(()))
    }

    /// Fails a `connect()` still waiting, with `error`.
    func failConnecting(_ error: any Error) {
        let waiter: CheckedContinuation<Bool, any Error>? = state.withLock { state in
            guard case .connecting(let waiter) = state.phase else { return nil }
            state.phase = .idle
            return waiter
        }
        waiter?.resume(throwing: error)
    }

    /// A message arrived. Returns `false` when the journal refused it: the caller drops the connection before the
    /// acknowledgement is written, and the client waits for the owner's permission to reconnect.
    func received(_ message: MQTTMessage) -> Bool {
        if let journal, journal.record(message) == .refused {
            state.withLock { state in
                if !state.lossCounted { state.lossesAwaitingPermission += 1 }
                state.lossCounted = true
            }
            return false
        }
        let sinks = state.withLock { state in
            state.messageSinks.values.filter { $0.filter.matches(message.topic) }.map(\.sink)
        }
        for sink in sinks { sink.yield(message) }
        return true
    }

    // MARK: Message ids

    /// Runs `call`, the libmosquitto call that queues an operation and assigns its message id, and makes the
    /// operation's owner in `table`, all under the lock, so that its acknowledgement (whose callback takes the
    /// same lock) cannot come first.
    /// - Parameters:
    ///   - queuedWhileDisconnected: Whether `MOSQ_ERR_NO_CONN` means queued (a QoS 1 or 2 publish, which
    ///     libmosquitto keeps and sends after reconnecting) rather than failed.
    func register<Value: Sendable>(
        in table: WritableKeyPath<State, LibMosquittoPendingAcks<Value>>, failsOnDisconnect: Bool,
        queuedWhileDisconnected: Bool = false, _ call: (inout Int32) -> Int32
    ) throws(MQTTError) -> LibMosquittoAckTicket<Value> {
        let (result, displaced) = state.withLock { state -> (Result<LibMosquittoAckTicket<Value>, MQTTError>, LibMosquittoAckTicket<Value>?) in
            var mid: Int32 = 0
            let code = call(&mid)
            let queued = code == MOSQ_ERR_SUCCESS.rawValue || (queuedWhileDisconnected && code == MOSQ_ERR_NO_CONN.rawValue)
            guard queued else { return (.failure(LibMosquittoLibrary.error(code)), nil) }
            let (owner, displaced) = state[keyPath: table].register(mid, failsOnDisconnect: failsOnDisconnect)
            return (.success(owner), displaced)
        }
        displaced?.finish(.failure(.notConnected))
        return try result.get()
    }

    // MARK: Streams

    func addMessageSink(filter: MQTTTopicFilter) -> AsyncStream<MQTTMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTMessage.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            defer { state.nextSinkID += 1 }
            state.messageSinks[state.nextSinkID] = (filter, continuation)
            return state.nextSinkID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.messageSinks.removeValue(forKey: id) }
        }
        return stream
    }

    func addEventSink() -> AsyncStream<MQTTConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTConnectionEvent.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            defer { state.nextSinkID += 1 }
            state.eventSinks[state.nextSinkID] = continuation
            return state.nextSinkID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.eventSinks.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: MQTTConnectionEvent) {
        let sinks = state.withLock { Array($0.eventSinks.values) }
        for sink in sinks { sink.yield(event) }
    }

    /// After `disconnect()`: fails every waiter and ends every stream.
    func shutDown() {
        failConnecting(MQTTError.notConnected)
        let (publishes, subscribes, unsubscribes, messageSinks, eventSinks) = state.withLock { state in
            state.phase = .idle
            defer {
                state.messageSinks = [:]
                state.eventSinks = [:]
            }
            return (
                state.publishes.takeAll(), state.subscribes.takeAll(), state.unsubscribes.takeAll(),
                state.messageSinks.values.map(\.sink), Array(state.eventSinks.values)
            )
        }
        for owner in publishes { owner.finish(.failure(.notConnected)) }
        for owner in subscribes { owner.finish(.failure(.notConnected)) }
        for owner in unsubscribes { owner.finish(.failure(.notConnected)) }
        for sink in eventSinks {
            sink.yield(.disconnected)
            sink.finish()
        }
        for sink in messageSinks { sink.finish() }
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
