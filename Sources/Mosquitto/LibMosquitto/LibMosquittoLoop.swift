import CMosquitto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The network thread's loop over one connection: what `mosquitto_loop` does — wait on the socket, read, write,
/// keep alive — with the journal in between the read and the write phases.
///
/// libmosquitto queues the PUBACK of a QoS 1 message as it reads it and writes queued packets only in its write
/// phase (other threads only queue, the handle being threaded). So the messages read in one phase — as many as
/// have arrived, up to ``batchLimit`` — go to the journal as one batch (``LibMosquittoContext/journalInbound()``),
/// which may commit them in one transaction, before any of their acknowledgements is written. A refusal shuts the
/// socket for writing before the write phase: none of the batch's acknowledgements is written, and the connection ends
/// when the broker has read those written before (``readToTheEnd()``).
///
/// It waits with `poll` on the socket and on the thread's own wakeup pipe (``LibMosquittoWakeup``), which the
/// client signals when it queues an operation or stops; `poll` also has no limit on descriptor numbers, unlike
/// libmosquitto's `select`.
///
/// With a write gate (``MQTTWriteGate``), it looks at the clock before each read and each write phase: after a pause
/// longer than the gate's limit (the process frozen, or starved) it asks the gate before going on, and when refused it
/// shuts the socket unwritten and is fenced for good.
///
/// A journaling connection with a probe (``MQTTInboundJournal/confirmationProbe``) that resumes after such a pause
/// first has the broker confirm that it still holds the session here (``confirmingTurn(_:readable:)``): another
/// process may have taken the session over meanwhile, and the end of this connection, which the broker closed then,
/// may reach this side after the messages it sent before — even long after, when the segment that carried it was lost
/// and is sent again. (Found in CI: a frozen store, woken after another took over, read its 20 requests in flight
/// with no end behind them yet, and applied them; the broker delivered them to the newer one too.)
struct LibMosquittoLoop {
    let pointer: OpaquePointer
    let context: LibMosquittoContext
    let wakeup: LibMosquittoWakeup
    /// When the thread last looked at the clock for the write gate.
    private var lastLook = ContinuousClock.now
    /// Whether the write gate refused: nothing more is written, no reconnect is made.
    private(set) var isFenced = false
    /// How long the broker has to answer the probe written on resuming after a pause.
    let confirmationTimeout: Duration
    /// While the answer to that probe is awaited: until when.
    private var confirmationDeadline: ContinuousClock.Instant?

    init(pointer: OpaquePointer, context: LibMosquittoContext, wakeup: LibMosquittoWakeup, confirmationTimeout: Duration) {
        self.pointer = pointer
        self.context = context
        self.wakeup = wakeup
        self.confirmationTimeout = confirmationTimeout
    }

    /// Whether messages read since a pause wait for the broker's answer, their acknowledgements queued: none of them may
    /// be written.
    var holdsUnconfirmed: Bool { confirmationDeadline != nil && context.inboundCount > 0 }

    /// How long a turn waits at most: how soon a keepalive is sent when nothing else happens.
    static let timeoutMilliseconds: Int32 = 100
    /// The most messages in one batch: a read phase ends there, to write their acknowledgements.
    static let batchLimit = 1_000
    /// How long a connection shut for writing after a refusal waits for the broker to close it (``readToTheEnd()``).
    static let lingerLimit = Duration.seconds(5)
    /// The most messages held while the broker's answer after a pause is awaited (the largest receive maximum of MQTT 5;
    /// QoS 0 messages are not bounded by it).
    static let heldLimit = 65_535

    private static let success = MOSQ_ERR_SUCCESS.rawValue

    /// One turn: wait, read (and journal), write, keep alive.
    /// - Returns: `MOSQ_ERR_SUCCESS`, or the error that ended the connection (`MOSQ_ERR_NO_CONN` when there is none),
    ///   as `mosquitto_loop` returns them.
    mutating func turn() -> Int32 {
        let socket = mosquitto_socket(pointer)
        guard socket >= 0 else { return MOSQ_ERR_NO_CONN.rawValue }
        // The acknowledgements of held messages are queued: the socket is not waited on for writing until they may go.
        let writes = mosquitto_want_write(pointer) && !holdsUnconfirmed
        let events = Int16(POLLIN) | (writes ? Int16(POLLOUT) : 0)
        var entries = [pollfd(fd: socket, events: events, revents: 0), pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
        let tlsPending = LibMosquittoTLS.hasPendingData(pointer)
        if poll(&entries, 2, tlsPending ? 0 : Self.timeoutMilliseconds) < 0 {
            return errno == EINTR ? Self.success : MOSQ_ERR_ERRNO.rawValue
        }
        if entries[1].revents != 0 { wakeup.drain() }
        // The process may have been frozen in that poll, and another have taken its place meanwhile.
        switch look() {
        case .fenced: return MOSQ_ERR_CONN_LOST.rawValue
        case .resumed: beginConfirmation()
        case .goOn: break
        }
        let readable = tlsPending || entries[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
        if confirmationDeadline != nil { return confirmingTurn(socket, readable: readable) }
        if readable {
            let (code, refused) = readPhase(socket)
            if code != Self.success || mosquitto_socket(pointer) < 0 { return code }
            if refused { return readToTheEnd() }
        }
        // Subscriptions the broker refused when they were made again after a reconnect, asked for again when due.
        let due = context.dueResubscriptions()
        if !due.isEmpty {
            context.logger.warning("asking the broker again for subscriptions it refused after a reconnect", metadata: ["filters": "\(due.map(\.0))"])
            LibMosquittoThreadActions(pointer: pointer, context: context).resubscribe(due)
        }
        // Also when nothing woke the socket for writing: an operation queued since the poll (as mosquitto_loop does
        // when its socket pair wakes it). Writing to a socket that cannot take more writes nothing.
        if mosquitto_want_write(pointer) {
            guard look() != .fenced else { return MOSQ_ERR_CONN_LOST.rawValue }
            let code = mosquitto_loop_write(pointer, 1)
            if code != Self.success || mosquitto_socket(pointer) < 0 { return code }
        }
        return mosquitto_loop_misc(pointer)
    }

    /// What a look at the clock found (``look()``).
    private enum Look {
        /// No pause since the last look.
        case goOn
        /// A pause longer than the write gate's limit, after which the gate allowed going on.
        case resumed
        /// The gate refused, now or before.
        case fenced
    }

    /// Whether the thread may go on: yes, unless it paused longer than the write gate's limit since its last look and
    /// the gate then refuses.
    private mutating func look() -> Look {
        let now = ContinuousClock.now
        guard let gate = context.writeGate, !isFenced else { return isFenced ? .fenced : .goOn }
        guard now - lastLook > gate.pauseLimit else {
            lastLook = now
            return .goOn
        }
        return ask(gate, because: "after a pause of \(now - lastLook)") ? .resumed : .fenced
    }

    /// After a pause, on a journaling connection with a probe: queues the probe, whose answer on this connection says
    /// that the broker still holds the session here; until then what is read is held (``confirmingTurn(_:readable:)``).
    private mutating func beginConfirmation() {
        guard context.journal != nil, let probe = context.probe, confirmationDeadline == nil else { return }
        var mid: Int32 = 0
        guard mosquitto_unsubscribe_v5(pointer, &mid, probe, nil) == Self.success else { return }
        context.resumptionProbeQueued(mid: mid)
        confirmationDeadline = .now + confirmationTimeout
    }

    /// A turn while the answer to the probe written on resuming is awaited. What was queued before anything was read —
    /// the probe last — is written; what is read is held: none of it is journaled, and none of its acknowledgements
    /// written. The answer sends it all to the journal as one batch (its acknowledgements are written at the next
    /// turn). The end of the connection, no answer within ``confirmationTimeout``, or more than ``heldLimit`` messages
    /// before it, drop it unacknowledged: the broker delivers it again to whoever holds the session then.
    private mutating func confirmingTurn(_ socket: Int32, readable: Bool) -> Int32 {
        if !holdsUnconfirmed, mosquitto_want_write(pointer) {
            let code = mosquitto_loop_write(pointer, 1)
            if code != Self.success || mosquitto_socket(pointer) < 0 { return endConfirmation(code) }
        }
        if readable {
            var code = Self.success
            repeat {
                errno = 0
                code = mosquitto_loop_read(pointer, 1)
            } while code == Self.success && mosquitto_socket(pointer) == socket && !context.stopRequested
                && context.inboundCount < Self.heldLimit && (Self.readable(socket) || LibMosquittoTLS.hasPendingData(pointer))
            if code != Self.success || mosquitto_socket(pointer) != socket { return endConfirmation(code) }
            // Paused again while it read: the answer it read may have come before the pause, and the session been
            // taken over after it.
            if pausedWhileReading(socket) { return endConfirmation(readToTheEnd()) }
        }
        if context.isResumptionConfirmed {
            confirmationDeadline = nil
            return journal() ? readToTheEnd() : Self.success
        }
        let overdue = confirmationDeadline.map { ContinuousClock.now >= $0 } ?? true
        guard overdue || context.inboundCount >= Self.heldLimit else { return Self.success }
        let why = overdue ? "no answer within \(confirmationTimeout)" : "\(Self.heldLimit) messages and no answer yet"
        context.logger.warning(
            "the broker did not confirm the session after a pause (\(why)): the connection is closed, none of the \(context.inboundCount) messages read since acknowledged")
        shutdown(socket, Int32(SHUT_RDWR))
        return endConfirmation(readToTheEnd())
    }

    /// Stops waiting for the broker's answer, dropping what was held; returns `code`.
    private mutating func endConfirmation(_ code: Int32) -> Int32 {
        confirmationDeadline = nil
        context.discardInbound()
        return code
    }

    /// Whether the thread may reconnect: the write gate, if any, is asked first (libmosquitto resends what it had in
    /// flight as soon as the broker answers).
    mutating func mayReconnect() -> Bool {
        guard let gate = context.writeGate, !isFenced else { return !isFenced }
        return ask(gate, because: "before a reconnect")
    }

    /// Asks `gate`; when it refuses, shuts the socket unwritten and fences the loop.
    private mutating func ask(_ gate: any MQTTWriteGate, because reason: String) -> Bool {
        let allowed = gate.mayWrite()
        lastLook = ContinuousClock.now
        guard !allowed else { return true }
        isFenced = true
        let socket = mosquitto_socket(pointer)
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        context.logger.error("the write gate refused \(reason): this client writes nothing more, and does not reconnect")
        return false
    }

    /// Reads what has arrived — a TLS handshake step, or packets — then hands the messages read to the journal.
    /// Ends when nothing more is there, at ``batchLimit`` messages, or when the client stops (a session being
    /// prepared must read nothing after its CONNACK).
    private mutating func readPhase(_ socket: Int32) -> (code: Int32, refused: Bool) {
        var code = Self.success
        var reads = 0
        repeat {
            errno = 0  // libmosquitto ends its own read loop on a stale EAGAIN
            code = mosquitto_loop_read(pointer, 1)
            reads += 1
        } while code == Self.success && reads < Self.batchLimit && mosquitto_socket(pointer) == socket
            && context.inboundCount < Self.batchLimit && !context.stopRequested
            && (Self.readable(socket) || LibMosquittoTLS.hasPendingData(pointer))
        // The connection ended during the phase: none of its acknowledgements can be written any more, so the broker
        // delivers these messages again — to whoever holds the session next, which may be another process that took it
        // over while this one was frozen or cut off (the end was waiting in the kernel behind them). A journaling
        // client leaves them to that delivery instead of recording them (docs/contract.md, "One store per store id").
        if context.journal != nil, code != Self.success || mosquitto_socket(pointer) != socket {
            context.discardInbound()
            return (code, false)
        }
        if pausedWhileReading(socket) { return (readToTheEnd(), false) }
        return (code, journal())
    }

    /// Whether the thread paused during a read phase — the process frozen or starved after the look at the clock
    /// before it — with messages read: it may have read on after the pause what the broker had sent before another
    /// process took the session over, with the end of the connection not here yet. Their acknowledgements are already
    /// queued, ahead of any probe, so the broker's confirmation cannot be asked for first (as after a pause met before
    /// the reads, ``beginConfirmation()``): the socket is shut and what was read dropped unacknowledged, and the broker
    /// delivers it again to whoever holds the session next — this client again, after a reconnect, when nobody took it.
    /// (Found in CI, twice under load: a store frozen in the middle of a read phase, woken after another took over,
    /// applied a request the broker delivered to the newer one too.)
    private mutating func pausedWhileReading(_ socket: Int32) -> Bool {
        guard context.journal != nil, context.probe != nil, context.inboundCount > 0 else { return false }
        switch look() {
        case .goOn: return false
        case .resumed:
            context.logger.warning(
                "paused while reading: the connection is closed, none of the \(context.inboundCount) messages read acknowledged; the broker delivers them again")
            shutdown(socket, Int32(SHUT_RDWR))
        case .fenced: break  // shut already
        }
        context.discardInbound()
        return true
    }

    /// After the socket was shut — for writing, after the journal's refusal (``LibMosquittoThreadActions/shutSocket()``),
    /// or whole, after the broker did not confirm — libmosquitto reads on to the end of the connection, closing it and
    /// calling the disconnect callback, with nothing written meanwhile. What it reads is dropped: none of it can be
    /// acknowledged any more, so the broker delivers it again.
    ///
    /// Shut for writing, the connection ends only when the broker closes it, having read everything written before the
    /// end: the PUBACKs of the batches recorded. A socket closed here while the broker still sends would answer with a
    /// reset, and mosquitto, busy writing (it reads a client's socket after writing what it has queued for it), drops
    /// the connection at the reset with those PUBACKs unread, and delivers their messages again: the journal would
    /// record them twice (found by an outside trial: requests applied twice after a PostgreSQL restart refused a batch
    /// in a burst). After ``lingerLimit`` without the broker's end, or when the client stops, it is shut whole.
    private func readToTheEnd() -> Int32 {
        let deadline = ContinuousClock.now + Self.lingerLimit
        var code = Self.success
        var reads = 0
        while code == Self.success, reads < 100_000 {
            let socket = mosquitto_socket(pointer)
            guard socket >= 0 else { break }
            if ContinuousClock.now >= deadline || context.stopRequested {
                shutdown(socket, Int32(SHUT_RDWR))  // what is left, then the end
            } else if !LibMosquittoTLS.hasPendingData(pointer), !Self.readable(socket, withinMilliseconds: Self.timeoutMilliseconds) {
                continue
            }
            errno = 0
            code = mosquitto_loop_read(pointer, 1)
            reads += 1
            context.discardInbound()
        }
        return code == Self.success ? MOSQ_ERR_CONN_LOST.rawValue : code
    }

    /// Hands the messages read to the journal and the streams; returns whether the journal refused one (the socket is
    /// shut then).
    private func journal() -> Bool {
        context.journalInbound(network: LibMosquittoThreadActions(pointer: pointer, context: context))
    }

    /// Whether the kernel holds more bytes of the connection, or its end: now, or within `milliseconds`.
    private static func readable(_ socket: Int32, withinMilliseconds milliseconds: Int32 = 0) -> Bool {
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }
}

/// OpenSSL's `SSL_pending`, found at run time (libmosquitto links OpenSSL; this module does not): over TLS, OpenSSL
/// may hold decrypted bytes that `poll` cannot see, and `mosquitto_loop_read` may leave some behind.
enum LibMosquittoTLS {
    private typealias Pending = @convention(c) (UnsafeMutableRawPointer?) -> Int32

    private static let pending: Pending? = {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "SSL_pending") else { return nil }
        return unsafeBitCast(symbol, to: Pending.self)
    }()

    /// Whether `SSL_pending` was found (it is wherever libmosquitto was built with TLS).
    static var isAvailable: Bool { pending != nil }

    /// Whether OpenSSL holds bytes of the connection not yet read by libmosquitto.
    static func hasPendingData(_ pointer: OpaquePointer) -> Bool {
        guard let ssl = mosquitto_ssl_get(pointer), let pending else { return false }
        return pending(ssl) > 0
    }
}
