import Foundation
import Logging
import Synchronization
import Mosquitto
import RestockTestSupport
import Testing

/// `prepareSession(subscribingTo:)` makes sure a persistent session is subscribed, without taking anything the
/// session holds — also when the session exists already, with other subscriptions and messages queued in it.
@Suite("Preparing a persistent session", .timeLimit(.minutes(2)))
struct PrepareSessionTests {
    @Test("a session that exists with another subscription and queued messages gets the subscription, and keeps its queue", arguments: [MQTTProtocolVersion.v5, .v311])
    func existingSessionWithQueue(version: MQTTProtocolVersion) async throws {
        var options = MosquittoBroker.Options()
        options.extraConfiguration = "log_type all"
        let broker = try await MosquittoBroker.start(options)
        let id = uniqueName("customer"), other = uniqueName("other"), alerts = uniqueName("alerts")
        // The session exists, subscribed to `other` only; then it goes away and messages queue for it.
        let original = try await connectedClient(to: broker, clientID: id, session: .persistent, protocolVersion: version)
        try await original.subscribe(to: other, qos: .atLeastOnce)
        await original.disconnect()
        let publisher = try await connectedClient(to: broker)
        for index in 0..<20 { try await publisher.publish("queued-\(index)", to: other, qos: .atLeastOnce) }

        let lines = LogLines()
        var logger = Logger(label: "prepare") { _ in LogLines.Handler(lines: lines) }
        logger.logLevel = .debug
        let preparing = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent, protocolVersion: version),
            logger: logger)
        #expect(try await preparing.prepareSession(subscribingTo: alerts) == true)

        // The session comes back (nothing subscribed by this client): first what was queued, then what is
        // published on the prepared subscription. (Published only now: the broker reads the preparing
        // connection's SUBSCRIBE in its own time, and nothing orders it before another connection's PUBLISH.)
        let back = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent, protocolVersion: version))
        let received = try back.messages(matching: "#")
        try await back.connect()
        let queued = try await first(20, of: received, within: 20)
        try await publisher.publish("the alert", to: alerts, qos: .atLeastOnce)
        await publisher.disconnect()
        let last: [MQTTMessage]
        do { last = try await first(1, of: received, within: 5) } catch {
            Issue.record("CLIENT \(lines.all.joined(separator: "\n"))")
            Issue.record("LOG \(broker.log.split(separator: "\n").filter { $0.contains(id) }.joined(separator: "\n"))")
            throw error
        }
        let messages = queued + last
        #expect(messages.filter { $0.topic == other }.count == 20, "the queue was kept")
        #expect(messages.contains { $0.topic == alerts && $0.payloadString == "the alert" })
        await back.disconnect()
    }
}

final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    struct Handler: LogHandler {
        let lines: LogLines
        var logLevel = Logger.Level.trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { nil } set {} }
        func log(event: LogEvent) { lines.lines.withLock { $0.append("\(event.message)") } }
    }
}
