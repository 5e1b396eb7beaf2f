import CMosquitto
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C callbacks handed to libmosquitto. Each is a plain function matching the C typedef exactly; it
/// runs on libmosquitto's network thread, recovers its ``LibMosquittoContext`` from the `userdata`
/// pointer (passed unretained: the client keeps the context alive until after `mosquitto_loop_stop`),
/// copies what it needs out of libmosquitto's buffers, which are freed when it returns, and hands on.
enum LibMosquittoCallbacks {
    static func install(on mosq: OpaquePointer) {
        mosquitto_connect_v5_callback_set(mosq, onConnect)
        mosquitto_disconnect_v5_callback_set(mosq, onDisconnect)
        mosquitto_publish_v5_callback_set(mosq, onPublish)
        mosquitto_subscribe_v5_callback_set(mosq, onSubscribe)
        mosquitto_unsubscribe_v5_callback_set(mosq, onUnsubscribe)
        mosquitto_message_v5_callback_set(mosq, onMessage)
        mosquitto_log_callback_set(mosq, onLog)
    }
}

private func onConnect(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ reasonCode: Int32, _ flags: Int32,
    _ properties: OpaquePointer?
) {
    guard let mosq, let userdata else { return }
    let context = Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue()
    context.connected(
        reasonCode: reasonCode, sessionPresent: cmosquitto_session_present(flags),
        network: LibMosquittoThreadActions(pointer: mosq, context: context))
}

/// The actions of the client's state machine that need the libmosquitto handle or the journal, performed on the
/// network thread: inside a callback, or between the loop's read and write phases (``LibMosquittoContext/perform(_:network:)``).
struct LibMosquittoThreadActions: NetworkThreadActions {
    let pointer: OpaquePointer
    let context: LibMosquittoContext

    /// The broker lost our session: makes the subscriptions again. These calls only queue packets; a refusal (a cluster
    /// electing leaders) is asked for again by the loop (``LibMosquittoLoop``) until granted.
    func resubscribe(_ subscriptions: [(String, MQTTClientStateMachine.ActiveSubscription)]) {
        for (filter, subscription) in subscriptions {
            var mid: Int32 = 0
            if mosquitto_subscribe_v5(pointer, &mid, filter, subscription.qos.rawValue, subscription.options, nil) == MOSQ_ERR_SUCCESS.rawValue {
                context.resubscriptionQueued(mid: mid, filter: filter)
            }
        }
    }

    /// SUBSCRIBE and DISCONNECT must reach the broker before anything the session holds is read: a message read is
    /// acknowledged by libmosquitto, and would be lost. libmosquitto writes nothing during the CONNACK callback and
    /// may read on in the same loop (a PUBLISH read while disconnecting is a protocol error to it, and it closes
    /// the socket with both packets unsent). So over plain TCP the two packets are written here, straight to the
    /// socket, which is then shut for writing: an acknowledgement libmosquitto makes of a message it reads
    /// afterwards never leaves. Over TLS (the bytes cannot bypass libmosquitto) they are queued, which holds when
    /// the session has nothing queued. The state machine has already told the thread to stop cleanly.
    func prepareSession(_ preparation: MQTTClientStateMachine.Preparation) {
        if preparation.plainTCP, LibMosquittoRawPackets.subscribeAndDisconnect(
            socket: mosquitto_socket(pointer), filter: preparation.filter, qos: preparation.qos, version: context.protocolVersion)
        {
            context.preparedSessionAroundLibrary()
            return
        }
        mosquitto_subscribe_v5(pointer, nil, preparation.filter, preparation.qos.rawValue, 0, nil)
        mosquitto_disconnect_v5(pointer, 0, nil)
    }

    /// The journal could not record a message: shuts the socket for writing now, while libmosquitto has only queued the
    /// PUBACKs of the read phase, so that none is written and the broker keeps the messages for the session. What was
    /// written before (the PUBACKs of the batches recorded) goes out ahead of the end; the loop reads on to the broker's
    /// end (``LibMosquittoLoop``), so that the connection is not reset before the broker has read them.
    func shutSocket() {
        let socket = mosquitto_socket(pointer)
        if socket >= 0 { shutdown(socket, Int32(SHUT_WR)) }
    }

    /// Queued behind the batch's PUBACKs, written with them in the write phase that follows.
    func probe(filter: String, after batch: UInt64) {
        var mid: Int32 = 0
        if mosquitto_unsubscribe_v5(pointer, &mid, filter, nil) == MOSQ_ERR_SUCCESS.rawValue {
            context.probeQueued(mid: mid, batch: batch)
        }
    }

    /// Hands the broker's answer to the probe to the journal: nothing else of the client runs for it.
    func confirm(throughBatch batch: UInt64) {
        context.journal?.confirmed(throughBatch: batch)
    }
}

private func onDisconnect(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ reasonCode: Int32, _ properties: OpaquePointer?
) {
    guard let userdata else { return }
    let context = Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue()
    // The messages read before the connection closed, in the read phase it closed in: their acknowledgements were
    // never written (they are written after the phase), so the broker delivers them again. A journaling client leaves
    // them to that delivery (``LibMosquittoLoop``); the others still hand them to their streams.
    if context.journal != nil {
        context.discardInbound()
    } else {
        _ = context.journalInbound(network: mosq.map { LibMosquittoThreadActions(pointer: $0, context: context) })
    }
    context.disconnected(reasonCode: reasonCode)
}

private func onPublish(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32, _ reasonCode: Int32,
    _ properties: OpaquePointer?
) {
    guard let userdata else { return }
    Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue().published(mid: mid, reasonCode: reasonCode)
}

private func onSubscribe(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32, _ count: Int32,
    _ granted: UnsafePointer<Int32>?, _ properties: OpaquePointer?
) {
    guard let userdata else { return }
    // One filter per SUBSCRIBE, so one granted QoS (or a refusal code of 0x80 and above).
    let grantedQoS = count > 0 ? granted?.pointee ?? 0x80 : 0x80
    Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue().subscribed(mid: mid, grantedQoS: grantedQoS)
}

private func onUnsubscribe(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32, _ properties: OpaquePointer?
) {
    guard let mosq, let userdata else { return }
    let context = Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue()
    context.unsubscribed(mid: mid, network: LibMosquittoThreadActions(pointer: mosq, context: context))
}

private func onMessage(
    _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?,
    _ properties: OpaquePointer?
) {
    guard let userdata, let message, let topic = message.pointee.topic else { return }
    let length = Int(message.pointee.payloadlen)
    let payload: [UInt8] =
        length > 0 && message.pointee.payload != nil
        ? Array(UnsafeRawBufferPointer(start: message.pointee.payload, count: length)) : []
    let copied = MQTTMessage(
        topic: String(cString: topic), payload: payload,
        qos: MQTTQoS(rawValue: message.pointee.qos) ?? .atMostOnce, retain: message.pointee.retain,
        properties: LibMosquittoProperties.read(properties))
    // Journaled with the other messages of the read phase, before any of their acknowledgements is written.
    Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue().messageRead(copied)
}

/// libmosquitto's log goes to the client's logger at the matching level; nothing is copied out of a line the
/// logger would drop (libmosquitto traces every packet at its debug level).
///
/// libmosquitto also reports a failed TLS handshake (a certificate it cannot verify, a host name the certificate
/// does not carry) only in its log, then quietly tries again: a connect waiting for its first answer is
/// failed with the reason instead of running into its timeout.
private func onLog(_ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ level: Int32, _ text: UnsafePointer<CChar>?) {
    guard let userdata, let text else { return }
    let context = Unmanaged<LibMosquittoContext>.fromOpaque(userdata).takeUnretainedValue()
    let logLevel = LibMosquittoLogLevel.swiftLogLevel(level)
    let logged = context.logger.logLevel <= logLevel
    guard logged || level == MOSQ_LOG_ERR else { return }
    let line = String(cString: text)
    if logged { context.logger.log(level: logLevel, "\(line)", metadata: ["libmosquitto": "\(LibMosquittoLogLevel.name(level))"]) }
    guard level == MOSQ_LOG_ERR, line.hasPrefix("OpenSSL Error") else { return }
    // "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed" → "certificate verify failed"
    let reason = line.split(separator: ":").last.map(String.init) ?? line
    context.failConnecting(MQTTError.connectionFailed("TLS handshake failed: \(reason)"))
}

/// libmosquitto's log levels (`MOSQ_LOG_…`) and their swift-log counterparts.
enum LibMosquittoLogLevel {
    static func swiftLogLevel(_ level: Int32) -> Logger.Level {
        switch level {
        case MOSQ_LOG_ERR: .error
        case MOSQ_LOG_WARNING: .warning
        case MOSQ_LOG_NOTICE: .notice
        case MOSQ_LOG_INFO: .info
        default: .trace  // MOSQ_LOG_DEBUG (a line per packet), MOSQ_LOG_SUBSCRIBE, MOSQ_LOG_UNSUBSCRIBE and any later one
        }
    }

    static func name(_ level: Int32) -> String {
        switch level {
        case MOSQ_LOG_ERR: "error"
        case MOSQ_LOG_WARNING: "warning"
        case MOSQ_LOG_NOTICE: "notice"
        case MOSQ_LOG_INFO: "info"
        case MOSQ_LOG_DEBUG: "debug"
        default: "level \(level)"
        }
    }
}
