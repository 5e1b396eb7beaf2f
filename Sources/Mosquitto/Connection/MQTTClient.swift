import Deadlines
import Dispatch
import Logging

/// An MQTT client over libmosquitto, for Swift concurrency.
///
/// ```swift
/// let client = try MQTTClient(configuration: .init(broker: .hostname("127.0.0.1"), clientID: "shop-1"))
/// try await client.connect()
/// let messages = try client.messages(matching: "restock/#")
/// try await client.subscribe(to: "restock/#")
/// try await client.publish(Array("hi".utf8), to: "restock/hello", qos: .atLeastOnce)
/// for await message in messages { print(message.topic) }
/// ```
///
/// libmosquitto runs the connection on a thread of the client's own (``LibMosquittoNetworkThread``), which
/// reconnects after a loss by ``MQTTConfiguration/reconnect`` (by default first within 100–200 ms, then at
/// most 800 ms apart), making the subscriptions again when the broker lost the session. Calls that wait on
/// the network (connecting) run on that thread, never on a Swift concurrency thread. Operations await the
/// broker's acknowledgement.
public final class MQTTClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: MQTTConfiguration

    /// The libmosquitto handle and the client's state, shared with the callbacks; internal so the `MQTTClient+…`
    /// extensions reach it.
    let handle: LibMosquittoHandle
    var context: LibMosquittoContext { handle.context }

    /// How long ``disconnect()`` waits for the network thread to send DISCONNECT and end.
    private static let stopTimeout = Duration.milliseconds(500)

    /// Creates a client; nothing is sent until ``connect()``.
    /// - Parameters:
    ///   - configuration: Where and how to connect.
    ///   - journal: Told of each incoming message before it is acknowledged to the broker.
    ///   - writeGate: Asked whether the process may still write, after the network thread was held up and before every
    ///     reconnect; `nil` (the default): always.
    ///   - logger: Receives libmosquitto's own log, at matching levels (its errors as `.error`, warnings as
    ///     `.warning`, notices as `.notice`, information as `.info`, the packet trace as `.debug`), with the
    ///     client id as metadata. By default nothing is logged.
    /// - Throws: ``MQTTError`` when the configuration is not usable.
    public init(
        configuration: MQTTConfiguration, journal: (any MQTTInboundJournal)? = nil, writeGate: (any MQTTWriteGate)? = nil,
        logger: Logger = Logger(label: "mosquitto", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(MQTTError) {
        try configuration.validate()
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "mqtt.client"] = "\(configuration.clientID)"
        let context = LibMosquittoContext(
            journal: journal, writeGate: writeGate, protocolVersion: configuration.protocolVersion, reconnection: configuration.reconnection, logger: logger)
        self.handle = try LibMosquittoHandle(configuration: configuration, context: context)
    }

    deinit {
        // Released without `disconnect()`: the connection drops without DISCONNECT, as if the process had
        // died, so the broker sends the will. The network thread, woken, ends at once (or after the TCP connect it
        // is in), then the handle is destroyed.
        handle.context.requestStop(.abruptly)?.wake()
    }

    // MARK: Connection

    /// Connects and waits for the broker's answer; from then on the client reconnects by itself.
    ///
    /// Cancelling the task, or calling ``disconnect()``, ends the wait at once.
    /// - Returns: Whether the broker still had a session for this client id.
    /// - Throws: ``MQTTError/connectionFailed(_:)``, ``MQTTError/connectionRefused(reasonCode:reason:)`` or
    ///   ``MQTTError/timedOut(_:)``; ``MQTTError/notConnected`` when ``disconnect()`` came first;
    ///   `CancellationError`. The client is then idle and may try again.
    @discardableResult
    public func connect() async throws -> Bool {
        try await connect(preparing: nil)
    }

    private func connect(preparing: MQTTClientStateMachine.Preparation?) async throws -> Bool {
        let context = self.context, configuration = self.configuration
        let (idle, previous) = context.connectCheck
        guard idle else { throw MQTTError.misuse("connect() called on a client that is already connected") }
        // A previous connection's thread may still be in a TCP connect to an unreachable host.
        if let previous { await previous.waitForEnd(within: .seconds(3600)) }
        let thread = LibMosquittoNetworkThread(handle: handle, configuration: configuration)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Bool, any Error>) in
                    context.connect(waiter, on: thread, preparing: preparing)
                    if Task.isCancelled { context.failConnecting(CancellationError()) }
                    let seconds = configuration.connectTimeout.seconds
                    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                        context.failConnecting(MQTTError.timedOut("no answer from \(configuration.broker) within \(seconds) s"))
                    }
                }
            } onCancel: {
                context.failConnecting(CancellationError())
            }
        } catch MQTTError.misuse(let detail) {
            throw MQTTError.misuse(detail)  // a second connect() raced the first: that one goes on
        } catch {
            await stopNetworkThread(within: Self.stopTimeout)
            throw error
        }
    }

    /// Makes sure the broker keeps a persistent session for this client id, subscribed to `filter`, without
    /// taking any message from it: it connects, subscribes and disconnects in one step, before anything the
    /// session holds is delivered, so nothing queued is acknowledged. A customer's session made this way keeps
    /// what is published from then on until the customer connects. The client is then disconnected.
    /// - Returns: Whether the broker already had a session for this client id.
    /// - Throws: What ``connect()`` throws; ``MQTTError/invalidConfiguration(_:)`` for a clean session.
    @discardableResult
    public func prepareSession(subscribingTo filter: String, qos: MQTTQoS = .atLeastOnce) async throws -> Bool {
        let filter = try MQTTTopicFilter(filter)
        guard configuration.session.isPersistent else {
            throw MQTTError.invalidConfiguration("prepareSession needs a persistent session")
        }
        let present = try await connect(
            preparing: .init(filter: filter.filter, qos: qos, plainTCP: !configuration.broker.usesTLS))
        // The CONNACK callback has queued SUBSCRIBE and DISCONNECT: the thread writes them and ends.
        await stopNetworkThread(within: .seconds(10))
        context.shutDown()
        return present
    }

    /// Disconnects cleanly (no will) and stops reconnecting, also while still connecting or waiting to
    /// reconnect: it returns within about half a second whatever the broker does. Waiting operations fail with
    /// ``MQTTError/notConnected``; message and event streams end.
    public func disconnect() async {
        context.failConnecting(MQTTError.notConnected)
        await stopNetworkThread(within: Self.stopTimeout)
        context.shutDown()
    }

    /// Ends the connection without DISCONNECT, as a process that died would, so that the broker publishes the will
    /// after everything this client sent before; stops reconnecting. Waiting operations fail with
    /// ``MQTTError/notConnected``; message and event streams end. What is queued and not yet written is dropped.
    public func abandon() async {
        context.failConnecting(MQTTError.notConnected)
        if let thread = context.requestStop(.abruptly) {
            thread.wake()
            await thread.waitForEnd(within: Self.stopTimeout)
        }
        context.shutDown()
    }

    /// Lets a client that lost its connection make it again: one configured with
    /// ``MQTTConfiguration/reconnection`` ``MQTTReconnection/whenAllowed``, or one whose journal refused a message
    /// (``MQTTInboundDisposition/refused``). It then reconnects by ``MQTTConfiguration/reconnect`` as usual. A call
    /// while connected allows nothing more: the next loss waits for the next call.
    public func allowReconnect() {
        context.allowReconnect()
    }

    /// Whether the client is connected right now.
    public var isConnected: Bool { context.isConnected }

    /// How many connections the broker has accepted (CONNACKs) since the client was made: when it changes, the
    /// connection was made again.
    package var connectionCount: UInt64 { context.connectionCount }

    /// The broker of ``MQTTConfiguration/brokers`` the client is connected to, or tries or last tried.
    public var currentBroker: BrokerAddress {
        let brokers = configuration.brokers
        return brokers[min(max(context.brokerIndex, 0), brokers.count - 1)]
    }

    /// Connection changes from now on: connected, connection lost, disconnected.
    public func connectionEvents() -> AsyncStream<MQTTConnectionEvent> {
        context.addEventSink()
    }

    /// Tells the network thread to disconnect cleanly and end, and waits for that up to `timeout`. The thread writes
    /// the DISCONNECT, after what it has queued.
    private func stopNetworkThread(within timeout: Duration) async {
        guard let thread = context.requestStop(.cleanly) else { return }
        thread.wake()
        await thread.waitForEnd(within: timeout)
    }
}
