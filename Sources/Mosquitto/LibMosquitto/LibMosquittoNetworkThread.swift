import CMosquitto
import Deadlines

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The thread that runs one connection of a client: it connects, runs its loop (``LibMosquittoLoop``: libmosquitto's
/// read and write phases, with the journal in between), and after a loss
/// waits by the client's ``MQTTReconnectPolicy`` (in milliseconds, with jitter, which libmosquitto's own
/// reconnect in `loop_forever` cannot do: it counts whole seconds) and calls `mosquitto_reconnect`, until the
/// context says stop. libmosquitto then resends the QoS 1 and 2 messages in flight, and the CONNACK callback
/// makes the subscriptions again when the broker lost the session, as before.
///
/// With a list of brokers (``MQTTConfiguration/brokers``) it connects to the first whose TCP connect succeeds, and
/// after a loss tries the same broker once, then the next ones in turn, each attempt after the policy's wait: the
/// client id, and so the persistent session, is the same on every broker of a cluster.
///
/// It is a thread of its own, never one of Swift's cooperative pool: the TCP connect blocks. The handle is
/// marked threaded (`mosquitto_threaded_set`), so other threads only queue packets and wake its `poll`.
/// It keeps the handle alive until it ends, so `mosquitto_destroy` never runs under it.
final class LibMosquittoNetworkThread: NetworkThreadControl {
    private let handle: LibMosquittoHandle
    private let configuration: MQTTConfiguration
    private let connectProperties: LibMosquittoProperties.List
    /// Signalled when an operation is queued, to cut a wait short, and when the client stops. `nil` when the
    /// process had no file descriptor left for it: the thread then fails to start.
    private let wakeup = LibMosquittoWakeup()
    /// Opened when the thread ends.
    private let exit = Latch()

    init(handle: LibMosquittoHandle, configuration: MQTTConfiguration) {
        self.handle = handle
        self.configuration = configuration
        self.connectProperties = LibMosquittoProperties.connect(for: configuration)
    }

    /// Starts the thread.
    func start() {
        guard wakeup != nil else {
            handle.context.failConnecting(MQTTError.connectionFailed("cannot start the network thread: no file descriptor left"))
            exit.open()
            return
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<LibMosquittoNetworkThread>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, box)
        if code == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<LibMosquittoNetworkThread>.fromOpaque(box).release()
            handle.context.failConnecting(MQTTError.connectionFailed("cannot start the network thread: \(String(cString: strerror(code)))"))
            exit.open()
        }
    }

    /// Cuts a wait of the thread short: it writes what was queued, or sees a stop, at once.
    func wake() { wakeup?.signal() }

    /// Waits until the thread has ended, or `timeout` has passed (a TCP connect to an unreachable host blocks
    /// it for as long as the kernel tries; it ends by itself afterwards).
    /// - Returns: Whether it has ended.
    @discardableResult
    func waitForEnd(within timeout: Duration) async -> Bool {
        // The latch's timer holds the latch, not the thread: holding the thread, and so the handle and its sockets,
        // for the whole timeout after it ended would make a client that connects and disconnects often pile up file
        // descriptors.
        let exit = self.exit
        return await exit.wait(timeout: timeout)
    }

    private func run() {
        defer { exit.open() }
        guard let wakeup else { return }
        let pointer = handle.pointer, context = handle.context
        guard connectToFirstAnswering() else { return }
        // The broker answers within the keepalive, or the connection counts as lost (MQTT's own rule for a PINGRESP).
        let answerWithin = Duration.seconds(configuration.keepAliveSeconds > 0 ? configuration.keepAliveSeconds : 30)
        var loop = LibMosquittoLoop(pointer: pointer, context: context, wakeup: wakeup, confirmationTimeout: answerWithin)
        var attempt = 0
        var connections: UInt64 = 0
        while true {
            switch context.directive {
            case .endAbruptly:
                // No DISCONNECT: the broker sees the connection end, and publishes the will.
                let socket = mosquitto_socket(pointer)
                if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
                return
            case .awaitBrokerClose:
                // SUBSCRIBE and DISCONNECT went out around libmosquitto: wait for the broker to close, discarding
                // what it sends, so that closing here can never reset the connection before it read them.
                LibMosquittoRawPackets.awaitClose(socket: mosquitto_socket(pointer), within: 2_000)
                return
            case .endCleanly where loop.holdsUnconfirmed:
                // Messages read after a pause wait for the broker's confirmation, their acknowledgements queued: none may
                // be written, so the connection ends unwritten, and the broker keeps them for the session.
                context.discardInbound()
                let socket = mosquitto_socket(pointer)
                if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
                return
            case .endCleanly:
                // Write what is queued, and read nothing more: a message read now would be acknowledged to the broker
                // by libmosquitto and then never handed to anyone (a session being prepared must keep every queued
                // message). Then DISCONNECT: over plain TCP written here, and the connection left to the broker to
                // close, discarding what it still sends (LibMosquittoRawPackets.disconnect: libmosquitto would close
                // it at once, and a reset would lose the PUBACKs before it); over TLS by libmosquitto.
                flushWrites(pointer)
                let socket = mosquitto_socket(pointer)
                if !configuration.broker.usesTLS, !mosquitto_want_write(pointer), LibMosquittoRawPackets.disconnect(socket: socket) {
                    LibMosquittoRawPackets.awaitClose(socket: socket, within: 2_000)
                    return
                }
                mosquitto_disconnect_v5(pointer, 0, nil)
                flushWrites(pointer)
                return
            case .run(let connectionsNow):
                if connectionsNow != connections {
                    connections = connectionsNow
                    attempt = 0
                }
            }
            let code = loop.turn()
            if code == MOSQ_ERR_SUCCESS.rawValue { continue }
            // Not connected: the connection was lost or closed, or the last attempt failed.
            guard !loop.isFenced, waitToReconnect(attempt: attempt, wakeup: wakeup) else { return waitForTheStop(wakeup) }
            guard loop.mayReconnect() else { return waitForTheStop(wakeup) }
            attempt += 1
            // A failure shows as NO_CONN from the next turn.
            if attempt == 1 || configuration.fallbackBrokers.isEmpty {
                _ = mosquitto_reconnect(pointer)
            } else {
                let brokers = configuration.brokers
                _ = connect(to: brokers[context.nextBroker(of: brokers.count)])
            }
        }
    }

    /// Connects to the first broker of the list whose TCP connect succeeds; when none does, fails `connect()` with
    /// what each said, and returns `false`.
    private func connectToFirstAnswering() -> Bool {
        var failures: [String] = []
        for (index, broker) in configuration.brokers.enumerated() {
            handle.context.tryingBroker(index)
            let code = connect(to: broker)
            if code == MOSQ_ERR_SUCCESS.rawValue { return true }
            let detail = code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : LibMosquittoLibrary.errorText(code)
            failures.append("\(broker): \(detail)")
            if handle.context.stopRequested { break }
        }
        handle.context.failConnecting(MQTTError.unreachable(failures.joined(separator: "; ")))
        return false
    }

    /// Starts a connection to `broker` (blocking in the TCP connect), with the configuration's CONNECT properties.
    private func connect(to broker: BrokerAddress) -> Int32 {
        mosquitto_connect_bind_v5(
            handle.pointer, broker.host, Int32(broker.port), Int32(configuration.keepAliveSeconds), nil, connectProperties.head)
    }

    /// Waits before reconnect attempt `attempt` by the policy, then, after a loss the owner must allow a reconnect
    /// after, until it does — touching nothing through libmosquitto. Returns `false` when the client stops instead.
    private func waitToReconnect(attempt: Int, wakeup: LibMosquittoWakeup) -> Bool {
        let context = handle.context
        if context.stopRequested { return false }
        let delay = configuration.reconnect.delay(beforeAttempt: attempt, random: Double.random(in: 0..<1))
        wakeup.wait(seconds: delay.seconds)
        // `allowReconnect()` and a stop wake the wait; the timeout only bounds a wakeup missed.
        while !context.mayReconnect, !context.stopRequested {
            wakeup.wait(seconds: 1)
        }
        return !context.stopRequested
    }

    /// Fenced (the write gate refused) or stopping: waits, writing nothing, until the client stops — its stop wakes the
    /// wait — and ends without a DISCONNECT or a flush.
    private func waitForTheStop(_ wakeup: LibMosquittoWakeup) {
        while !handle.context.stopRequested { wakeup.wait(seconds: 1) }
    }

    /// Writes the queued packets, waiting for the socket to take them, for at most two seconds; writing
    /// DISCONNECT closes the connection.
    private func flushWrites(_ pointer: OpaquePointer) {
        let deadline = ContinuousClock.now + .seconds(2)
        while mosquitto_want_write(pointer), ContinuousClock.now < deadline {
            let socket = mosquitto_socket(pointer)
            guard socket >= 0 else { return }
            var ready = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            guard poll(&ready, 1, 100) >= 0 else { return }
            if ready.revents & Int16(POLLOUT) != 0, mosquitto_loop_write(pointer, 1) != MOSQ_ERR_SUCCESS.rawValue { return }
        }
    }
}
