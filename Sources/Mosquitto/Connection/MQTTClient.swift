import CMosquitto
import Dispatch
import Glibc

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
/// libmosquitto runs the connection on its own thread (`mosquitto_loop_start`) and reconnects by itself
/// with exponential backoff, making the subscriptions again when the broker lost the session. Calls that
/// wait on the network (connecting, stopping the thread) run on a private dispatch queue, never on a
/// Swift concurrency thread. Operations await the broker's acknowledgement.
public final class MQTTClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: MQTTConfiguration

    private let handle: LibMosquittoHandle
    /// Serializes the blocking calls: connect, `loop_start`, `loop_stop`.
    private let control = DispatchQueue(label: "restock.mosquitto.control")

    /// Shared with the callbacks; internal so the `MQTTClient+…` extensions reach it.
    var context: LibMosquittoContext { handle.context }
    var pointer: OpaquePointer { handle.pointer }

    /// Creates a client; nothing is sent until ``connect()``.
    /// - Parameters:
    ///   - configuration: Where and how to connect.
    ///   - journal: Told of each incoming message before it is acknowledged to the broker.
    /// - Throws: ``MQTTError`` when the configuration is not usable.
    public init(configuration: MQTTConfiguration, journal: (any MQTTInboundJournal)? = nil) throws(MQTTError) {
        try configuration.validate()
        self.configuration = configuration
        let context = LibMosquittoContext(journal: journal, protocolVersion: configuration.protocolVersion)
        self.handle = try LibMosquittoHandle(configuration: configuration, context: context)
    }

    // MARK: Connection

    /// Connects and waits for the broker's answer; from then on the client reconnects by itself.
    /// - Returns: Whether the broker still had a session for this client id.
    /// - Throws: ``MQTTError/connectionFailed(_:)``, ``MQTTError/connectionRefused(reasonCode:reason:)`` or
    ///   ``MQTTError/timedOut(_:)``; the client is then idle and may try again.
    @discardableResult
    public func connect() async throws -> Bool {
        let handle = self.handle, context = self.context, configuration = self.configuration
        let connectProperties = LibMosquittoProperties.connect(for: configuration)
        do {
            return try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Bool, any Error>) in
                let alreadyActive = context.state.withLock { state -> Bool in
                    guard case .idle = state.phase else { return true }
                    state.phase = .connecting(waiter)
                    return false
                }
                if alreadyActive {
                    waiter.resume(throwing: MQTTError.invalidConfiguration("connect() called on a client that is already connected"))
                    return
                }
                control.async {
                    var code = mosquitto_connect_bind_v5(
                        handle.pointer, configuration.broker.host, Int32(configuration.broker.port),
                        Int32(configuration.keepAliveSeconds), nil, connectProperties.head)
                    let detail = code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : LibMosquittoLibrary.errorText(code)
                    if code == MOSQ_ERR_SUCCESS.rawValue { code = mosquitto_loop_start(handle.pointer) }
                    if code != MOSQ_ERR_SUCCESS.rawValue {
                        context.failConnecting(.connectionFailed("\(configuration.broker): \(detail)"))
                    }
                }
                let seconds = Double(configuration.connectTimeout.components.seconds)
                    + Double(configuration.connectTimeout.components.attoseconds) / 1e18
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                    context.failConnecting(.timedOut("no answer from \(configuration.broker) within \(seconds) s"))
                }
            }
        } catch {
            await stopNetworkThread(sendDisconnect: true)
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
        context.state.withLock { $0.preparing = (filter.filter, qos) }
        defer { context.state.withLock { $0.preparing = nil } }
        let present = try await connect()
        await stopNetworkThread(sendDisconnect: false)
        context.shutDown()
        return present
    }

    /// Disconnects cleanly (no will) and stops reconnecting. Waiting operations fail with
    /// ``MQTTError/notConnected``; message and event streams end.
    public func disconnect() async {
        await stopNetworkThread(sendDisconnect: true)
        context.shutDown()
    }

    /// Whether the client is connected right now.
    public var isConnected: Bool {
        context.state.withLock { state in
            if case .online(let connected) = state.phase { return connected }
            return false
        }
    }

    /// Connection changes from now on: connected, connection lost, disconnected.
    public func connectionEvents() -> AsyncStream<MQTTConnectionEvent> {
        context.addEventSink()
    }

    private func stopNetworkThread(sendDisconnect: Bool) async {
        let handle = self.handle
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            control.async {
                if sendDisconnect { mosquitto_disconnect_v5(handle.pointer, 0, nil) }
                mosquitto_loop_stop(handle.pointer, false)
                done.resume()
            }
        }
    }

    // MARK: Waiting for acknowledgements

    /// Waits for the acknowledgement of `mid`, in the table at `table`. Cancelling the task stops the wait
    /// (the operation itself may still complete at the broker).
    func acknowledgement<Value: Sendable>(
        of mid: Int32, in table: WritableKeyPath<LibMosquittoContext.State, LibMosquittoPendingAcks<Value>> & Sendable,
        failsOnDisconnect: Bool = false
    ) async throws -> Value {
        let context = self.context
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Value, any Error>) in
                let registration = context.state.withLock {
                    $0[keyPath: table].wait(for: mid, with: waiter, failsOnDisconnect: failsOnDisconnect)
                }
                switch registration {
                case .waiting: break
                case .acknowledged(let result): waiter.resume(with: result.mapError { $0 as any Error })
                case .cancelled: waiter.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiter = context.state.withLock { $0[keyPath: table].abandon(mid) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Throws ``MQTTError/notConnected`` unless `connect()` has succeeded and `disconnect()` not been called.
    func requireSession() throws(MQTTError) {
        let online = context.state.withLock { state in
            if case .online = state.phase { return true }
            return false
        }
        guard online else { throw .notConnected }
    }
}
