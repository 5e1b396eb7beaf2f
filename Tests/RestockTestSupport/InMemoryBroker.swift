import Deadlines
import Foundation
import Mosquitto
import RestockMQTT
import Synchronization

/// A broker in memory, for the store service's unit tests (the seam of docs/architecture.md): sessions clean or
/// persistent, subscriptions with wildcards, retained messages, QoS 1 acknowledgements (held back on demand), wills,
/// session takeover, a journal that may refuse a message (the connection drops and the session keeps it), and
/// restarts with or without persistence. What it does not model — packet ids, flow control, TCP — the integration
/// tests cover against a real mosquitto.
///
/// Every message is routed and delivered under one lock, in order, so what one connection publishes reaches each
/// subscriber in that order.
public final class InMemoryBroker: BrokerConnector, @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`, a recursive lock (a will is routed while a connection
    // is being dropped, itself under the lock).
    private let lock = NSRecursiveLock()
    private var isUp = true
    private var sessions: [String: Session] = [:]
    private var retained: [String: MQTTMessage] = [:]
    private var live: [String: InMemoryConnection] = [:]
    private var connections: [Weak] = []
    private var holdingAcknowledgements = false
    /// Opened when held subscription answers are released (``holdSubscriptionAnswers()``); `nil` when none are held.
    private var subscriptionHold: Latch?
    /// When the first subscription answer now held was asked for.
    private var subscriptionHeldSince: ContinuousClock.Instant?
    /// The one client whose subscriptions are held, or `nil` for all.
    private var subscriptionHoldClient: String?
    /// What answers to the unsubscriptions of a client wait for, and how many began waiting (``holdUnsubscribeAnswers(of:)``).
    private var unsubscribeHolds: [String: (latch: Latch, asked: Int)] = [:]
    private var heldAcknowledgements = Completion()
    /// What waits, in order, for a connection whose reader is frozen (``holdDeliveries(to:)``), by client id.
    private var heldDeliveries: [String: [MQTTMessage]] = [:]
    /// Client ids whose journal's probes go unanswered for now (``holdProbeAnswers(of:)``), and the probes held.
    private var probeHolds: Set<String> = []
    private var heldProbes: [(connection: InMemoryConnection, batch: UInt64)] = []
    private var log: [String] = []
    /// A cluster electing leaders: refuses subscriptions with reason code 0x80 while it is set.
    public let subscriptionRefusals = ElectionRefusals()
    /// A cluster electing leaders: closes new connections before their CONNACK while it is set (TCP connects succeed).
    public let connectionRefusals = ElectionRefusals()

    /// A session the broker keeps for a client id.
    fileprivate struct Session {
        var persistent: Bool
        var subscriptions: [String: MQTTSubscriptionOptions] = [:]
        /// QoS 1 messages for the session while its client is away (or refused them), oldest first.
        var queued: [MQTTMessage] = []
    }

    public init() {}

    // MARK: BrokerConnector

    /// A connection of this broker. It has no network thread that a freeze could hold up, so `writeGate` is never asked.
    package func connection(
        clientID: String, session: MQTTSession, will: MQTTWill?, reconnection: MQTTReconnection, journal: (any MQTTInboundJournal)?,
        writeGate: (any MQTTWriteGate)?
    ) throws -> any BrokerConnection {
        let connection = InMemoryConnection(
            broker: self, clientID: clientID, persistent: session.isPersistent, will: will, reconnection: reconnection, journal: journal)
        locked { connections.append(Weak(connection)) }
        return connection
    }

    private struct Weak {
        weak var connection: InMemoryConnection?
        init(_ connection: InMemoryConnection) { self.connection = connection }
    }

    // MARK: Faults and checks

    /// The broker goes away: every connection is lost (wills published first); connecting fails until ``start()``.
    /// Without persistence it forgets every session and retained message, as a restarted mosquitto without it does.
    public func stop(persistence: Bool = true) {
        let dropped: [InMemoryConnection] = locked {
            isUp = false
            return Array(live.values)
        }
        for connection in dropped { drop(connection, reason: "the broker went away", publishingWill: false) }
        locked {
            if !persistence {
                sessions = [:]
                retained = [:]
            }
        }
    }

    /// The broker is back: connections that reconnect by themselves come back.
    public func start() {
        let waiting: [InMemoryConnection] = locked {
            isUp = true
            return waitingToReconnect
        }
        for connection in waiting { connection.reconnectIfAllowed() }
    }

    /// Acknowledgements of publications wait until ``releaseAcknowledgements()`` (a broker that stopped answering).
    public func holdAcknowledgements() {
        locked {
            if !holdingAcknowledgements { heldAcknowledgements = Completion() }
            holdingAcknowledgements = true
        }
    }

    /// Acknowledgements are given again, the held ones first.
    public func releaseAcknowledgements() {
        let held: Completion = locked {
            holdingAcknowledgements = false
            return heldAcknowledgements
        }
        held.complete(throwing: nil)
    }

    /// Every subscription is answered `delay` late from now on, its retained messages right after (a slow link).
    /// A frozen reader (a stopped process, or its socket's bytes held by the network): what the broker sends the
    /// connection of `clientID` from now waits, in order, as in its socket, and reaches it before the answer to its
    /// next subscription — which must read it first, as TCP would — or at ``releaseDeliveries(to:)``.
    public func holdDeliveries(to clientID: String) { locked { heldDeliveries[clientID] = heldDeliveries[clientID] ?? [] } }

    /// Ends ``holdDeliveries(to:)``: hands what waited to the connection, in order.
    public func releaseDeliveries(to clientID: String) {
        locked {
            guard let held = heldDeliveries.removeValue(forKey: clientID), let connection = live[clientID] else { return }
            for message in held { _ = connection.deliver(message) }
        }
    }

    /// Keeps `message` for `clientID` when its reader is frozen; whether it did.
    fileprivate func held(_ message: MQTTMessage, for clientID: String) -> Bool {
        locked {
            guard heldDeliveries[clientID] != nil else { return false }
            heldDeliveries[clientID]?.append(message)
            return true
        }
    }

    /// A partition on the way back: the acknowledgements `clientID`'s connection writes for what it is delivered, and the
    /// probe its journal asks for after them (``MQTTInboundJournal/confirmationProbe``), reach the broker only at
    /// ``releaseProbeAnswers(of:)``; a connection dropped before then never has its probes answered.
    public func holdProbeAnswers(of clientID: String) { locked { _ = probeHolds.insert(clientID) } }

    /// Ends ``holdProbeAnswers(of:)``: answers the held probes of `clientID`'s connection if it is still live.
    public func releaseProbeAnswers(of clientID: String) {
        let answers: [(InMemoryConnection, UInt64)] = locked {
            probeHolds.remove(clientID)
            let (mine, others) = (heldProbes.filter { $0.connection.clientID == clientID }, heldProbes.filter { $0.connection.clientID != clientID })
            heldProbes = others
            return mine.filter { live[clientID] === $0.connection }.map { ($0.connection, $0.batch) }
        }
        for (connection, batch) in answers { connection.journal?.confirmed(throughBatch: batch) }
    }

    /// How many probes of `clientID`'s connections wait for their answer.
    public func heldProbeCount(of clientID: String) -> Int { locked { heldProbes.count { $0.connection.clientID == clientID } } }

    /// Answers the probe `connection`'s journal asked for after batch `batch`, or holds it.
    fileprivate func answerProbe(of connection: InMemoryConnection, batch: UInt64) {
        let answer: Bool = locked {
            guard live[connection.clientID] === connection else { return false }
            guard !probeHolds.contains(connection.clientID) else {
                heldProbes.append((connection, batch))
                return false
            }
            return true
        }
        if answer { connection.journal?.confirmed(throughBatch: batch) }
    }

    /// A slow link: the broker answers no subscription (of `clientID` only, when given) until
    /// ``releaseSubscriptionAnswers()``.
    public func holdSubscriptionAnswers(of clientID: String? = nil) {
        locked {
            subscriptionHold = subscriptionHold ?? Latch()
            subscriptionHoldClient = clientID
        }
    }

    /// Answers the held subscriptions, and every later one at once.
    public func releaseSubscriptionAnswers() {
        let hold: Latch? = locked {
            defer { (subscriptionHold, subscriptionHeldSince) = (nil, nil) }
            return subscriptionHold
        }
        hold?.open()
    }

    /// A connection whose socket died unnoticed (a broker restarted while its process was frozen): the broker answers
    /// no unsubscription of `clientID` until ``releaseUnsubscribeAnswers(of:)``.
    public func holdUnsubscribeAnswers(of clientID: String) { locked { unsubscribeHolds[clientID] = unsubscribeHolds[clientID] ?? (Latch(), 0) } }

    /// Answers the held unsubscriptions of `clientID`, and every later one at once.
    public func releaseUnsubscribeAnswers(of clientID: String) { _ = locked { unsubscribeHolds.removeValue(forKey: clientID) }?.latch.open() }

    /// How many unsubscriptions of `clientID` were held since ``holdUnsubscribeAnswers(of:)``.
    public func heldUnsubscribeCount(of clientID: String) -> Int { locked { unsubscribeHolds[clientID]?.asked ?? 0 } }

    /// Ends the connection of `clientID` (without its will), as a socket the broker closed: a connection that reconnects
    /// by itself comes back at once.
    public func dropConnection(of clientID: String) {
        guard let connection = locked({ live[clientID] }) else { return }
        drop(connection, reason: "the connection was lost", publishingWill: false, keepingSession: true)
    }

    /// What an unsubscription's answer waits for, when answers to `clientID` are held.
    fileprivate func unsubscribeAnswerHold(for clientID: String) -> Latch? {
        locked {
            guard unsubscribeHolds[clientID] != nil else { return nil }
            unsubscribeHolds[clientID]?.asked += 1
            return unsubscribeHolds[clientID]?.latch
        }
    }

    /// How long the oldest subscription answer now held has waited; `nil` when none waits.
    public var subscriptionAnswerHeldFor: Duration? { locked { subscriptionHeldSince.map { ContinuousClock.now - $0 } } }

    /// The retained message of `topic`, if any.
    public func retainedMessage(on topic: String) -> MQTTMessage? { locked { retained[topic] } }

    /// What the broker did: connections, takeovers, refusals, drops (one line each).
    public var events: [String] { locked { log } }

    /// The messages queued for `clientID`'s session.
    public func queued(for clientID: String) -> [MQTTMessage] { locked { sessions[clientID]?.queued ?? [] } }

    /// Publishes as a client would, at QoS 1, without a connection of its own.
    public func publish(_ payload: [UInt8], to topic: String, retain: Bool = false) {
        route(MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: retain))
    }

    // MARK: For the connections

    fileprivate func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private var waitingToReconnect: [InMemoryConnection] {
        connections.compactMap(\.connection).filter(\.wantsToReconnect)
    }

    /// How late subscriptions are answered.
    /// What a subscription's answer waits for, when answers are held.
    fileprivate func subscriptionAnswerHold(for clientID: String) -> Latch? {
        locked {
            guard let hold = subscriptionHold, subscriptionHoldClient.map({ $0 == clientID }) ?? true else { return nil }
            subscriptionHeldSince = subscriptionHeldSince ?? .now
            return hold
        }
    }

    /// Throws what a connect of `clientID` meets when the broker is down, or when it closes the connection before its
    /// CONNACK (``connectionRefusals``), noting it in ``events``. Called with the lock held.
    private func admit(_ clientID: String) throws {
        guard isUp else {
            log.append("unreachable \(clientID)")
            throw MQTTError.unreachable("\(clientID): Connection refused")
        }
        if connectionRefusals.refuses() {
            log.append("closed before its CONNACK \(clientID)")
            throw MQTTError.connectionFailed("connection closed before its CONNACK")
        }
    }

    /// Whether the broker takes connections.
    fileprivate var acceptsConnections: Bool { locked { isUp } }

    /// Connects `connection`, taking over a live connection of the same client id. Returns whether a session was present.
    fileprivate func connect(_ connection: InMemoryConnection) throws -> Bool {
        let (present, previous): (Bool, InMemoryConnection?) = try locked {
            try admit(connection.clientID)
            let previous = live[connection.clientID]
            let present = connection.persistent && sessions[connection.clientID] != nil
            if !present || !connection.persistent { sessions[connection.clientID] = Session(persistent: connection.persistent) }
            live[connection.clientID] = connection
            log.append("connected \(connection.clientID) present=\(present)")
            return (present, previous)
        }
        if let previous, previous !== connection {
            locked { log.append("took over \(connection.clientID)") }
            drop(previous, reason: "session taken over", publishingWill: true, keepingSession: true)
        }
        connection.becameConnected(sessionPresent: present)
        deliverQueued(to: connection)
        return present
    }

    /// Ends `connection`'s network connection. A clean disconnect publishes no will; a clean session ends with it.
    fileprivate func drop(
        _ connection: InMemoryConnection, reason: String, publishingWill: Bool, keepingSession: Bool = false, clean: Bool = false
    ) {
        let will: MQTTWill? = locked {
            guard live[connection.clientID] === connection else { return nil }
            live[connection.clientID] = nil
            heldProbes.removeAll { $0.connection === connection }  // never answered now
            if !connection.persistent, !keepingSession { sessions[connection.clientID] = nil }
            log.append("dropped \(connection.clientID): \(reason)")
            return publishingWill && !clean ? connection.will : nil
        }
        connection.becameDisconnected(reason: reason, clean: clean)
        if let will { route(MQTTMessage(topic: will.topic.name, payload: will.payload, qos: will.qos, retain: will.retain)) }
    }

    fileprivate func subscribe(_ connection: InMemoryConnection, to filter: String, options: MQTTSubscriptionOptions) throws {
        let matching: [MQTTMessage] = try locked {
            guard live[connection.clientID] === connection else { throw MQTTError.notConnected }
            sessions[connection.clientID]?.subscriptions[filter] = options
            guard options.retainHandling != .doNotSend, let parsed = try? MQTTTopicFilter(filter) else { return [] }
            return retained.values.filter { parsed.matches($0.topic) }.sorted { $0.topic < $1.topic }
        }
        for message in matching { _ = connection.deliver(MQTTMessage(topic: message.topic, payload: message.payload, qos: .atLeastOnce, retain: true)) }
    }

    fileprivate func unsubscribe(_ connection: InMemoryConnection, from filter: String) {
        locked { _ = sessions[connection.clientID]?.subscriptions.removeValue(forKey: filter) }
    }

    /// Routes a publication: keeps it retained, delivers it to every session subscribed, queues it for sessions away.
    fileprivate func route(_ message: MQTTMessage) {
        let refusing: [InMemoryConnection] = locked {
            if message.retain { retained[message.topic] = message.payload.isEmpty ? nil : message }
            var refusing: [InMemoryConnection] = []
            let delivered = MQTTMessage(topic: message.topic, payload: message.payload, qos: .atLeastOnce, retain: false)
            for (clientID, session) in sessions.sorted(by: { $0.key < $1.key })
            where session.subscriptions.keys.contains(where: { (try? MQTTTopicFilter($0))?.matches(message.topic) == true }) {
                if let connection = live[clientID], session.queued.isEmpty {
                    if connection.deliver(delivered) { continue }
                    refusing.append(connection)
                }
                if session.persistent { sessions[clientID]?.queued.append(delivered) }
            }
            return refusing
        }
        for connection in refusing { refused(by: connection) }
    }

    /// Delivers what waited for `connection`'s session, in order, until its journal refuses one.
    private func deliverQueued(to connection: InMemoryConnection) {
        let refusedOne: Bool = locked {
            while let next = sessions[connection.clientID]?.queued.first, live[connection.clientID] === connection {
                guard connection.deliver(next) else { return true }
                sessions[connection.clientID]?.queued.removeFirst()
            }
            return false
        }
        if refusedOne { refused(by: connection) }
    }

    /// A journal refused a message: it stays in the session's queue (with every later one), and the connection drops.
    private func refused(by connection: InMemoryConnection) {
        locked { log.append("refused by the journal of \(connection.clientID)") }
        drop(connection, reason: "the journal refused a message", publishingWill: true, keepingSession: true)
    }

    /// The acknowledgement of a publication routed now: at once, or once released when the broker holds them back.
    fileprivate func acknowledgement() -> Completion? {
        locked { holdingAcknowledgements ? heldAcknowledgements : nil }
    }

    /// A session made (or found) for `clientID`, subscribed to `filter`, with nothing taken from it.
    fileprivate func prepareSession(_ clientID: String, subscribingTo filter: String) throws -> Bool {
        try locked {
            try admit(clientID)
            let present = sessions[clientID] != nil
            sessions[clientID, default: Session(persistent: true)].subscriptions[filter] = MQTTSubscriptionOptions()
            return present
        }
    }
}

/// One connection to an ``InMemoryBroker``, as ``BrokerConnection``: QoS 1 publications made while it is away wait and
/// go out when it is back, as libmosquitto's do.
final class InMemoryConnection: BrokerConnection, @unchecked Sendable {
    // @unchecked: the mutable state is in `state`, a Mutex; the rest is immutable.
    let broker: InMemoryBroker
    let clientID: String
    let persistent: Bool
    let will: MQTTWill?
    let reconnection: MQTTReconnection
    let journal: (any MQTTInboundJournal)?

    private struct State {
        var connected = false
        var stopped = false
        var lost = false
        var permitted = false
        var nextSink: UInt64 = 0
        var sinks: [UInt64: (filter: MQTTTopicFilter, continuation: AsyncStream<MQTTMessage>.Continuation)] = [:]
        var eventSinks: [UInt64: AsyncStream<MQTTConnectionEvent>.Continuation] = [:]
        var outbound: [(message: MQTTMessage, sent: Completion)] = []
        /// How many deliveries the journal recorded (each is a batch of one here).
        var recordedBatches: UInt64 = 0
        var connections: UInt64 = 0
    }

    private let state = Mutex(State())

    init(
        broker: InMemoryBroker, clientID: String, persistent: Bool, will: MQTTWill?, reconnection: MQTTReconnection,
        journal: (any MQTTInboundJournal)?
    ) {
        self.broker = broker
        self.clientID = clientID
        self.persistent = persistent
        self.will = will
        self.reconnection = reconnection
        self.journal = journal
    }

    /// Lost, not stopped, and allowed to come back.
    var wantsToReconnect: Bool {
        state.withLock { $0.lost && !$0.stopped && (reconnection == .automatic || $0.permitted) }
    }

    func connect() async throws -> Bool {
        // As ``MQTTClient``: a connection lost and not stopped reconnects by itself (once allowed), not by connect().
        if state.withLock({ $0.lost && !$0.stopped }) { throw MQTTError.misuse("connect() called on a client that is already connected") }
        state.withLock { $0.stopped = false }
        return try broker.connect(self)
    }

    func disconnect() async { await close(clean: true) }

    func abandon() async { await close(clean: false) }

    /// Stops the connection: cleanly (no will), or as a process that died (the will).
    private func close(clean: Bool) async {
        let (events, sinks, outbound) = state.withLock { state in
            state.stopped = true
            state.lost = false
            defer {
                state.eventSinks = [:]
                state.sinks = [:]
                state.outbound = []
            }
            return (Array(state.eventSinks.values), state.sinks.values.map(\.continuation), state.outbound.map(\.sent))
        }
        broker.drop(self, reason: clean ? "disconnected" : "abandoned", publishingWill: !clean, clean: clean)
        for sent in outbound { sent.complete(throwing: MQTTError.notConnected) }
        for sink in events {
            sink.yield(.disconnected)
            sink.finish()
        }
        for sink in sinks { sink.finish() }
    }

    func allowReconnect() {
        state.withLock { $0.permitted = true }
        reconnectIfAllowed()
    }

    var isConnected: Bool { state.withLock { $0.connected } }

    var connectionCount: UInt64 { state.withLock { $0.connections } }

    func connectionEvents() -> AsyncStream<MQTTConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTConnectionEvent.self)
        state.withLock { state in
            state.eventSinks[state.nextSink] = continuation
            state.nextSink += 1
        }
        return stream
    }

    func messages(matching filter: String) throws -> AsyncStream<MQTTMessage> {
        let parsed = try MQTTTopicFilter(filter)
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTMessage.self)
        state.withLock { state in
            state.sinks[state.nextSink] = (parsed, continuation)
            state.nextSink += 1
        }
        return stream
    }

    func subscribe(to filter: String, qos: MQTTQoS, options: MQTTSubscriptionOptions) async throws {
        if let hold = broker.subscriptionAnswerHold(for: clientID), !(await hold.wait()) { throw CancellationError() }
        if broker.subscriptionRefusals.refuses() {
            throw MQTTError.subscribeRefused(filter: filter, reasonCode: 0x80, reason: "unspecified error")
        }
        broker.releaseDeliveries(to: clientID)
        try broker.subscribe(self, to: filter, options: options)
    }

    func unsubscribe(from filter: String) async throws {
        if let hold = broker.unsubscribeAnswerHold(for: clientID), !(await hold.wait()) { throw CancellationError() }
        broker.unsubscribe(self, from: filter)
    }

    func send(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement {
        let message = MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: retain)
        let (connected, stopped) = state.withLock { ($0.connected, $0.stopped) }
        if stopped { throw MQTTError.notConnected }
        if connected {
            broker.route(message)
            let held = broker.acknowledgement()
            return BrokerAcknowledgement { try await held?.wait() }
        }
        // Away: it goes out when the connection is back, and is acknowledged then.
        let sent = Completion()
        let queued: Bool = state.withLock { state in
            guard !state.connected else { return false }
            state.outbound.append((message, sent))
            return true
        }
        if !queued {
            broker.route(message)
            sent.complete(throwing: nil)
        }
        return BrokerAcknowledgement {
            try await sent.wait()
            try await self.broker.acknowledgement()?.wait()
        }
    }

    func sendNow(_ payload: [UInt8], to topic: String, retain: Bool) throws -> BrokerAcknowledgement {
        let (connected, stopped) = state.withLock { ($0.connected, $0.stopped) }
        guard connected, !stopped else { throw MQTTError.notConnected }
        broker.route(MQTTMessage(topic: topic, payload: payload, qos: .atMostOnce, retain: retain))
        return BrokerAcknowledgement {}
    }

    func prepareSession(subscribingTo filter: String) async throws -> Bool {
        try broker.prepareSession(clientID, subscribingTo: filter)
    }

    // MARK: From the broker

    func becameConnected(sessionPresent: Bool) {
        let (events, outbound) = state.withLock { state in
            state.connected = true
            state.connections += 1
            state.lost = false
            state.permitted = false
            defer { state.outbound = [] }
            return (Array(state.eventSinks.values), state.outbound)
        }
        for sink in events { sink.yield(.connected(sessionPresent: sessionPresent)) }
        for (message, sent) in outbound {
            broker.route(message)
            sent.complete(throwing: nil)
        }
    }

    func becameDisconnected(reason: String, clean: Bool) {
        let events: [AsyncStream<MQTTConnectionEvent>.Continuation] = state.withLock { state in
            let wasConnected = state.connected
            state.connected = false
            guard !clean, wasConnected else { return [] }
            state.lost = true
            state.permitted = false
            return Array(state.eventSinks.values)
        }
        for sink in events { sink.yield(.connectionLost(reason: reason)) }
        if reconnection == .automatic { reconnectIfAllowed() }
    }

    /// Connects again, in a task of its own (never inside the broker's routing), if it is lost and may.
    func reconnectIfAllowed() {
        guard wantsToReconnect, broker.acceptsConnections else { return }
        Task { [self] in
            guard wantsToReconnect else { return }
            _ = try? broker.connect(self)
        }
    }

    /// Hands `message` to the journal (which may refuse it: `false`) and to the streams whose filter matches.
    func deliver(_ message: MQTTMessage) -> Bool {
        if broker.held(message, for: clientID) { return true }
        if let journal {
            let number = state.withLock { $0.recordedBatches + 1 }
            guard journal.record(batch: [message], number: number).first == .recorded else { return false }
            state.withLock { $0.recordedBatches = number }
            if journal.confirmationProbe != nil { broker.answerProbe(of: self, batch: number) }
        }
        let sinks = state.withLock { state in state.sinks.values.filter { $0.filter.matches(message.topic) }.map(\.continuation) }
        for sink in sinks { sink.yield(message) }
        return true
    }
}

/// Set once (with or without an error), awaited by any number of tasks; a cancelled wait ends at once with
/// `CancellationError`. A ``Latch`` and the error it was set with.
final class Completion: Sendable {
    private let latch = Latch()
    private let error = Mutex<(any Error)?>(nil)

    func complete(throwing error: (any Error)?) {
        guard !latch.isOpen else { return }
        self.error.withLock { $0 = $0 ?? error }
        latch.open()
    }

    func wait() async throws {
        guard await latch.wait() else { throw CancellationError() }
        if let error = error.withLock({ $0 }) { throw error }
    }
}
