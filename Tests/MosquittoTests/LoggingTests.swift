import Foundation
import Logging
import Mosquitto
import RestockTestSupport
import Synchronization
import Testing

/// libmosquitto's own log reaches the client's swift-log `Logger`, at matching levels.
@Suite("libmosquitto's log in swift-log", .timeLimit(.minutes(1)))
struct LoggingTests {
    /// Keeps every entry a logger lets through.
    final class Collected: Sendable {
        struct Entry: Sendable {
            var level: Logger.Level
            var message: String
            var metadata: Logger.Metadata
        }

        private let entries = Mutex<[Entry]>([])
        func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
        var all: [Entry] { entries.withLock { $0 } }

        func logger(level: Logger.Level) -> Logger {
            var logger = Logger(label: "test") { _ in Handler(collected: self) }
            logger.logLevel = level
            return logger
        }

        struct Handler: LogHandler {
            let collected: Collected
            var logLevel = Logger.Level.trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                collected.append(.init(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
            }
        }
    }

    func connectAndSubscribe(_ broker: MosquittoBroker, logger: Logger, clientID: String) async throws {
        let client = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: clientID), logger: logger)
        try await client.connect()
        try await client.subscribe(to: "log/test", qos: .atLeastOnce)
        await client.disconnect()
    }

    @Test("at .trace the packet trace arrives as trace entries, with the client id as metadata")
    func packetTrace() async throws {
        let broker = try await MosquittoBroker.start()
        let collected = Collected()
        let id = uniqueName("logged")
        try await connectAndSubscribe(broker, logger: collected.logger(level: .trace), clientID: id)
        let connect = collected.all.first { $0.message.contains("sending CONNECT") }
        #expect(connect?.level == .trace, "\(collected.all.map(\.message))")
        #expect(connect?.metadata["mqtt.client"] == "\(id)")
        #expect(connect?.metadata["libmosquitto"] == "debug")
        #expect(collected.all.contains { $0.message.contains("sending SUBSCRIBE") })
    }

    @Test("at .debug (and .info) the packet trace is not passed on: a line per packet is too much for an operator's debug log (found by the operator trial)", arguments: [Logger.Level.debug, .info])
    func debugDropsTrace(level: Logger.Level) async throws {
        let broker = try await MosquittoBroker.start()
        let collected = Collected()
        try await connectAndSubscribe(broker, logger: collected.logger(level: level), clientID: uniqueName("quiet"))
        #expect(!collected.all.contains { $0.message.contains("sending CONNECT") || $0.message.contains("sending SUBSCRIBE") }, "\(collected.all.map(\.message))")
    }
}
