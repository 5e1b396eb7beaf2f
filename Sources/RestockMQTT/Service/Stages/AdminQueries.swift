import Foundation
import Logging
import Mosquitto
import RestockCore
import RestockPipeline
import ServiceLifecycle

/// Answers the admin's questions that change nothing — the report and the list of dead letters (docs/contract.md,
/// "Reports", "Dead letters") — on the store's publishing connection, so that a reply can go to the MQTT 5 response
/// topic the request names, with its correlation data (requests taken by the store's session are journaled without
/// their properties). A request without a response topic (MQTT 3.1.1) is answered on `P/{store}/admin/replies`, with
/// the request's `id`. The figures are read on the pipeline's thread, from the store's file. Every minute it also
/// refreshes the report's gauges in `/metrics`.
struct AdminQueries: Service {
    let client: any BrokerConnection
    /// The questions, from streams made with the connection; the start subscribes to them before the store says online.
    let reports: AsyncStream<MQTTMessage>
    let lists: AsyncStream<MQTTMessage>
    let topics: RestockTopics
    let storage: any StoreStorage
    let clock: @Sendable () -> Date
    let logger: Logger
    let metrics: StoreMetrics
    /// How often the report's gauges are refreshed.
    let gaugeInterval: Duration

    /// As the session's request subscriptions: no retained question at subscribe (v5), and a retained one that still
    /// arrives keeps its flag, so that it is refused as every retained request is.
    static let subscriptionOptions = MQTTSubscriptionOptions(retainHandling: .doNotSend, retainAsPublished: true)

    func run() async throws {
        // Subscribed by the start, before the store said online; the client makes the subscriptions again when its
        // connection comes back.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await message in reports { await self.answer(message, report: true) } }
                group.addTask { for await message in lists { await self.answer(message, report: false) } }
                group.addTask {
                    while !Task.isCancelled {
                        if let report = try? await self.report(sku: nil) { self.metrics.record(report) }
                        try? await Task.sleep(for: self.gaugeInterval)
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// The report as of now, read on the pipeline's thread.
    private func report(sku: SKU?) async throws -> StoreReport {
        try await storage.withExecutor { try storage.report(at: clock(), sku: sku) }
    }

    private func answer(_ message: MQTTMessage, report: Bool) async {
        // A retained question is never answered (docs/contract.md: a retained request is refused); clearing one, an empty
        // retained message, is no question at all.
        if message.retain, message.payload.isEmpty { return }
        do {
            if message.retain { throw RequestDecoder.retainedRequest }
            let (topic, properties) = try replyTopic(of: message)
            let request = try ReportRequest(payload: message.payload, shape: report ? ReportRequest.shape : ReportRequest.deadLetterListShape)
            let payload: [UInt8]
            if report {
                var figures = try await self.report(sku: request.sku)
                (figures.store, figures.id, figures.at) = (topics.store.rawValue, request.id, Timestamp.string(from: clock()))
                if request.sku == nil { metrics.record(figures) }
                payload = figures.payloadBytes()
            } else {
                guard request.sku == nil else { throw RequestRefusal(code: .invalidField, detail: "a dead-letter list takes no \"sku\"") }
                let entries = try await storage.withExecutor { try storage.deadLetterList() }
                payload = DeadLetterList(store: topics.store.rawValue, id: request.id, at: Timestamp.string(from: clock()), deadLetters: entries)
                    .payloadBytes()
            }
            logger.info("answered an admin's \(report ? "report" : "dead-letter list") request", metadata: [StoreLoggingKeys.topic: "\(topic)"])
            _ = try client.send(payload, to: topic, retain: false, properties: properties)
        } catch let refusal as RequestRefusal {
            // Counted with every other refusal (issue 32: 20 refused, 0 counted).
            metrics.requestsRefused[refusal.code]?.increment()
            logger.notice("refused a request", metadata: [StoreLoggingKeys.topic: "\(message.topic)", StoreLoggingKeys.error: "\(refusal)"])
            let report = ErrorReport(refusal: refusal, topic: message.topic, at: clock())
            _ = try? client.send(report.payloadBytes(), to: topics.adminErrors, retain: false)
        } catch {
            logger.error("cannot answer an admin's request", metadata: [StoreLoggingKeys.topic: "\(message.topic)", StoreLoggingKeys.error: "\(error)"])
        }
    }

    /// Where the reply goes: the request's MQTT 5 response topic, which must be one level under `P/{store}/admin/replies/`
    /// (the store publishes nowhere else for a request, and the shipped ACL lets it publish on `admin/replies/+` only: a
    /// publish the broker's ACL refuses is lost, and a broker may drop the connection for it), with its correlation data;
    /// otherwise `P/{store}/admin/replies`.
    private func replyTopic(of message: MQTTMessage) throws(RequestRefusal) -> (String, MQTTMessageProperties) {
        guard let topic = message.properties.responseTopic else { return (topics.adminReplies, MQTTMessageProperties()) }
        guard Self.isReplyTopic(topic, under: topics.adminReplies) else {
            throw RequestRefusal(
                code: .invalidField,
                detail: "the response topic must be one level under \(topics.adminReplies)/ (such as \(topics.adminReplies)/r1), without '/', '+' or '#' in that level, at most 1024 bytes in all")
        }
        return (topic, MQTTMessageProperties(correlationData: message.properties.correlationData))
    }

    /// Whether `topic` is one topic level under `replies` (`replies/r1`): not empty, no `/`, no wildcard, no NUL, at most
    /// 1024 bytes in all.
    static func isReplyTopic(_ topic: String, under replies: String) -> Bool {
        let prefix = replies + "/"
        guard topic.hasPrefix(prefix), topic.utf8.count <= 1_024 else { return false }
        let level = topic.utf8.dropFirst(prefix.utf8.count)
        return !level.isEmpty && !level.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == 0 }
    }
}
