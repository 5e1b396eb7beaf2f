#if canImport(Glibc)
import Glibc
#endif
import Deadlines
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTPTypes
import RestockPipeline
import Synchronization

/// The bounds of the operator's HTTP endpoint (issue 32: 1,100 idle connections took the descriptors the broker
/// connection needed, and a request with 600 KB of headers was answered 400 but its connection never closed).
public struct HTTPLimits: Sendable, Equatable {
    /// How long a request's head may take to arrive: from the connection's opening for its first request, from the
    /// first byte of it for a later one.
    public var headTimeout: Duration
    /// How long a connection may stay idle between requests (keep-alive) before it is closed.
    public var idleTimeout: Duration
    /// The most bytes of one header field, and of all of them (the request line aside).
    public var maximumHeadBytes: Int
    /// The most HTTP connections open at once; one more is answered 503 and closed.
    public var maximumConnections: Int

    /// What the endpoint allows by default: 5 s for a head, 60 s idle, 16 KiB of headers, and as many connections as
    /// ``connections(forDescriptorLimit:)`` leaves to HTTP.
    public static func standard(descriptorLimit: Int) -> HTTPLimits {
        HTTPLimits(
            headTimeout: .seconds(5), idleTimeout: .seconds(60), maximumHeadBytes: 16 * 1024,
            maximumConnections: connections(forDescriptorLimit: descriptorLimit))
    }

    /// Descriptors kept from HTTP for everything else the process holds: the broker connections (two, and a third while
    /// one is replaced), the data directory's files (two databases, their WAL and shared-memory files, the lock, the
    /// attempt file), the standard streams, and the event loops' own descriptors.
    public static let reservedDescriptors = 64
    /// The most connections the HTTP side takes, however many descriptors the process may open.
    public static let connectionCeiling = 256

    /// How many connections HTTP may hold with `limit` descriptors (RLIMIT_NOFILE): half of what is left after
    /// ``reservedDescriptors``, at most ``connectionCeiling``, at least 4.
    public static func connections(forDescriptorLimit limit: Int) -> Int {
        min(connectionCeiling, max(4, (limit - reservedDescriptors) / 2))
    }

    /// The process's descriptor limit (RLIMIT_NOFILE, soft), or `nil` when it cannot be read or is unlimited.
    public static func descriptorLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Tests only, in debug builds only: `RESTOCK_TEST_HTTP_LIMITS=head=1,idle=2,connections=8` (seconds, seconds, a
    /// count) shortens the limits so that a test sees them act within seconds; each may only be lowered. Not an option:
    /// an operator has no reason to change them, and a release build ignores the variable (an outside trial lifted the
    /// cap with it, and crashed the store with `connections=1e300`).
    func overridden(by environment: [String: String]) -> HTTPLimits {
        #if DEBUG
        guard let text = environment["RESTOCK_TEST_HTTP_LIMITS"] else { return self }
        var limits = self
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]), value > 0, value <= 3600 else { continue }
            switch parts[0] {
            case "head": limits.headTimeout = min(limits.headTimeout, .milliseconds(Int64(value * 1000)))
            case "idle": limits.idleTimeout = min(limits.idleTimeout, .milliseconds(Int64(value * 1000)))
            case "connections": limits.maximumConnections = min(limits.maximumConnections, max(1, Int(value)))
            default: continue
            }
        }
        return limits
        #else
        return self
        #endif
    }
}

/// What all the HTTP connections of one endpoint share: how many are open (and its gauge, `restock_http_connections`),
/// the refusals' counter, and when a refusal was last logged.
final class HTTPConnectionCount: Sendable {
    let limits: HTTPLimits
    private let open = Atomic<Int>(0)
    private let lastRefusalLog = Mutex<ContinuousClock.Instant?>(nil)
    /// The clock that spaces the refusals' log lines.
    private let clock: ServiceClock
    private let gauge = Gauge(label: StoreMetric.httpConnections.name)
    private let refusals = Counter(label: StoreMetric.httpConnectionsRefused.name)
    private let closings = Counter(label: StoreMetric.httpConnectionsTimedOut.name)
    let logger: Logger

    init(limits: HTTPLimits, logger: Logger, clock: ServiceClock = .continuous) {
        self.clock = clock
        self.limits = limits
        self.logger = logger
        gauge.record(0)
    }

    /// A connection opened; `false` when it is one too many (it is then not counted as open).
    func opened() -> Bool {
        let now = open.wrappingAdd(1, ordering: .relaxed).newValue
        guard now > limits.maximumConnections else {
            gauge.record(now)
            return true
        }
        open.wrappingSubtract(1, ordering: .relaxed)
        refusals.increment()
        let log = lastRefusalLog.withLock { last in
            guard last.map({ clock.now - $0 >= .seconds(60) }) ?? true else { return false }
            last = clock.now
            return true
        }
        if log {
            logger.warning(
                "refused an HTTP connection: \(limits.maximumConnections) are open, the most the HTTP side may hold; it was answered 503 and closed (at most one such line a minute)")
        }
        return false
    }

    /// A connection counted by ``opened()`` closed.
    func closed() {
        gauge.record(open.wrappingSubtract(1, ordering: .relaxed).newValue)
    }

    /// A connection closed because it was idle, or too slow to send a head, or left half-open after its answer.
    func timedOut() { closings.increment() }
}

/// Keeps one HTTP connection within ``HTTPLimits``, after Hummingbird's HTTP/1 decoding (it sees the request parts) and
/// before its handling:
/// - counts it, and answers one past the cap `503` and closes it;
/// - closes it when a request's head does not arrive in time: from the opening for the first, from the first byte of a
///   later one (NIO's decoder passes a read on as a read completion even when no part is whole yet);
/// - closes it when it stays idle between requests past the idle timeout;
/// - closes it fully once Hummingbird has closed its output (after a `400` for a malformed or oversized head, or a
///   `Connection: close`): Hummingbird then waits for the client to close, which a client need never do.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// No request under way: waiting for one until `deadline`; `headStarted` once its bytes began to come.
        case waiting(deadline: NIODeadline, headStarted: Bool)
        /// A head was read; its answer is not all written.
        case inRequest
        /// Closed, or closing.
        case done
    }

    private let count: HTTPConnectionCount
    private var state: State
    private var counted = false
    private var timer: Scheduled<Void>?
    /// How long a connection whose output is closed may stay before it is closed whole: time for the client to read
    /// the answer.
    static let lingerAfterAnswer = TimeAmount.seconds(1)

    init(count: HTTPConnectionCount) {
        self.count = count
        state = .waiting(deadline: .now() + TimeAmount(count.limits.headTimeout), headStarted: true)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !counted, case .waiting = state else { return }
        guard count.opened() else {
            state = .done
            refuse(context)
            return
        }
        counted = true
        state = .waiting(deadline: .now() + TimeAmount(count.limits.headTimeout), headStarted: true)
        schedule(context)
    }

    /// One connection too many: `503`, then closed.
    private func refuse(_ context: ChannelHandlerContext) {
        let body = ByteBuffer(string: "too many HTTP connections: try again later\n")
        let head = HTTPResponse(
            status: .serviceUnavailable, headerFields: [.connection: "close", .contentLength: "\(body.readableBytes)", .contentType: "text/plain"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    private func finish() {
        state = .done
        timer?.cancel()
        timer = nil
        if counted {
            counted = false
            count.closed()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            if case .waiting = state { state = .inRequest }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes came while waiting idle: a head has begun, and has the head timeout from now (not the idle one).
        if case .waiting(let deadline, false) = state {
            state = .waiting(deadline: min(deadline, .now() + TimeAmount(count.limits.headTimeout)), headStarted: true)
            schedule(context)
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), case .inRequest = state {
            state = .waiting(deadline: .now() + TimeAmount(count.limits.idleTimeout), headStarted: false)
            schedule(context)
        }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .output, !isDone {
            // Hummingbird has answered and closed its side; it would wait for the client's side for ever.
            state = .done
            timer?.cancel()
            let loop = context.eventLoop.assumeIsolated()
            timer = loop.scheduleTask(in: Self.lingerAfterAnswer) { [count] in
                count.timedOut()
                context.close(promise: nil)
            }
        }
        context.close(mode: mode, promise: promise)
    }

    private var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Arms the timer for the current deadline (one timer at a time; it re-arms itself when the deadline moved).
    private func schedule(_ context: ChannelHandlerContext) {
        guard case .waiting(let deadline, _) = state else { return }
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            guard let self, case .waiting(let deadline, _) = self.state else { return }
            guard deadline <= .now() else { return self.schedule(context) }
            self.state = .done
            self.count.timedOut()
            context.close(promise: nil)
        }
    }
}
