#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import RestockMQTT
import ServiceLifecycle

/// The operator's HTTP endpoint of a store process (docs/operations.md, "Health and metrics"), over Hummingbird:
/// - `GET /livez`: 200 while the process and its stages run;
/// - `GET /readyz`: 200 while the store is online on the broker, holds its claim and takes requests; otherwise 503
///   with the reason in one line;
/// - `GET /metrics`: what `metrics` renders, in Prometheus's text format.
///
/// A `Service`: run it in the same `ServiceGroup` as the store, before it, so that it answers while the store drains.
/// An address it cannot listen on (taken, not this machine's) ends it with ``OperationsServerError``.
public struct OperationsServer: Service {
    private let address: HTTPListenAddress
    private let health: StoreHealth
    private let metrics: @Sendable () -> [UInt8]
    private let logger: Logger

    /// An endpoint on `address` that answers from `health`, and `/metrics` with what `metrics` returns.
    public init(address: HTTPListenAddress, health: StoreHealth, metrics: @escaping @Sendable () -> [UInt8], logger: Logger) {
        self.address = address
        self.health = health
        self.metrics = metrics
        self.logger = logger
    }

    /// Serves until graceful shutdown.
    /// - Throws: when the address cannot be bound.
    public func run() async throws {
        let router = Router()
        let readiness = { @Sendable in
            let detail = [health.watchesDetail, health.storageDetail].compactMap { $0 }
            return Self.answer(health.readiness, broker: health.broker, detail: detail.isEmpty ? nil : detail.joined(separator: "; "))
        }
        router.get("livez") { _, _ in Self.answer(health.liveness) }
        router.get("readyz") { _, _ in readiness() }
        // A probe by HEAD (`curl -I`, some load balancers) gets GET's status and headers, without the body.
        router.head("livez") { _, _ in Self.answer(health.liveness).withoutBody }
        router.head("readyz") { _, _ in readiness().withoutBody }
        router.get("metrics") { [metrics] _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics())))
        }
        let (address, logger) = (address, logger)
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .notice)  // Hummingbird's own start and stop lines
        // The endpoint's share of the process's descriptors: the broker connections and the data directory keep theirs.
        let descriptors = HTTPLimits.descriptorLimit()
        let limits = HTTPLimits.standard(descriptorLimit: descriptors ?? 1_024).overridden(by: ProcessInfo.processInfo.environment)
        let connections = HTTPConnectionCount(limits: limits, logger: logger)
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [HTTPConnectionGuard(count: connections)], idleTimeout: nil,
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maximumHeadBytes, maxHeaderListSize: limits.maximumHeadBytes, maxHeaderFieldCount: 100))
        let application = Application(
            router: router, server: .http1(configuration: http1),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                logger.info("serving /livez, /readyz and /metrics on http://\(HTTPListenAddress(host: address.host, port: port))")
                let share = descriptors.map { "of the process's \($0) file descriptors (RLIMIT_NOFILE)" } ?? "(no descriptor limit)"
                logger.info(
                    "the HTTP endpoint holds at most \(limits.maximumConnections) connections \(share), the rest kept for the broker connections and the data directory; a request's head within \(limits.headTimeout.components.seconds) s and \(limits.maximumHeadBytes / 1024) KiB, idle connections closed after \(limits.idleTimeout.components.seconds) s")
                if let descriptors, descriptors < HTTPLimits.reservedDescriptors + 2 * HTTPLimits.connectionCeiling {
                    logger.warning(
                        "the process may open only \(descriptors) file descriptors: raise it (ulimit -n, LimitNOFILE=) to at least \(HTTPLimits.reservedDescriptors + 2 * HTTPLimits.connectionCeiling)")
                }
            },
            logger: quiet)
        do {
            try await application.run()
        } catch let error as IOError {
            throw OperationsServerError(address: address, reason: String(cString: strerror(error.errnoCode)))
        }
    }

    /// Binds `address` and lets it go: whether the endpoint can listen there, asked before the store makes anything (a
    /// port in use was refused only after the store had made its data directory: found by an outside trial). The server
    /// binds it again when it runs, so an address taken in between is still refused then.
    /// - Throws: ``OperationsServerError`` with the system's reason.
    public static func checkAvailable(_ address: HTTPListenAddress) async throws {
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: address.host, port: address.port).get()
            try await channel.close()
        } catch let error as IOError {
            throw OperationsServerError(address: address, reason: String(cString: strerror(error.errnoCode)))
        } catch is SocketAddressError.UnknownHost {
            // A name that does not resolve: NIO's own words named its type ("SocketAddressError.UnknownHost: …", found by an
            // outside trial).
            throw OperationsServerError(address: address, reason: "\(address.host) is not a host name this machine resolves")
        } catch is SocketAddressError {
            throw OperationsServerError(address: address, reason: "\(address.host) is not a host name this machine resolves")
        }
    }

    /// The check's answer; a passing readiness names the broker the store is on, how full the store is, and where its
    /// state and lease are (`ok: on mqtt://host:port; watches 12 of 10000000 (0.0%); state in /var/lib/restock, lease
    /// epoch 1 renewed 0.4 s ago`).
    private static func answer(_ check: StoreHealth.Check, broker: String? = nil, detail: String? = nil) -> Response {
        switch check {
        case .passing:
            let text = (broker.map { "ok: on \($0)" } ?? "ok") + (detail.map { "; \($0)" } ?? "")
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: text + "\n")))
        case .failing(let reason):
            return Response(status: .serviceUnavailable, body: ResponseBody(byteBuffer: ByteBuffer(string: reason + "\n")))
        }
    }
}

extension Response {
    /// The answer to a HEAD: this one's status and headers, with no body.
    fileprivate var withoutBody: Response { Response(status: status, headers: headers) }
}

/// The endpoint cannot listen on its address.
extension OperationsServer: CustomStringConvertible {
    /// What the service lifecycle logs when it starts this service.
    public var description: String { "OperationsServer(\(address))" }
}

public struct OperationsServerError: Error, Sendable, CustomStringConvertible {
    /// The address given.
    public let address: HTTPListenAddress
    /// The system's reason (`Address already in use`).
    public let reason: String

    /// One line: where, why, and what to do.
    public var description: String {
        "cannot serve HTTP on \(address): \(reason); give --http an address of this machine with a free port"
    }
}
