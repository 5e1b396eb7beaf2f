import Foundation
import Mosquitto
import RestockCore
import RestockPipeline

// The admin's requests beyond stock (docs/contract.md, "Admin requests").
extension StoreClient {
    /// Forgets `customer` (admin): the store removes every watch and row about them, clears their retained mirror, and
    /// answers once nothing about them is left in its data directory but what its next checkpoint removes.
    /// - Returns: The store's answer, with how many watches the customer had.
    /// - Throws: ``RestockMQTTError/storeOffline(store:)``, ``RestockMQTTError/refused(code:detail:)``,
    ///   ``RestockMQTTError/noAnswer(what:seconds:)``, or an ``MQTTError`` for the connection.
    @discardableResult
    public func forget(_ customer: CustomerID, wait: Double = 10) async throws -> ForgottenReport {
        try await request(
            topics.adminForget, payload: ForgetRequest(customer: customer).payload, answer: topics.adminForgotten,
            errors: topics.adminErrors, wait: wait, accepting: { $0.customer == customer.rawValue })
    }
}

extension StoreClient {
    /// The store's report (admin): customers, watches, and per SKU the watches, those waiting, and the alerts raised and
    /// acknowledged over the store's life and the last 24 hours.
    ///
    /// Over MQTT 5 the request names a response topic of its own one level under `P/{store}/admin/replies/` (the store
    /// refuses any other: the shipped ACL lets it publish there only) and correlation data;
    /// over 3.1.1 the reply comes on `P/{store}/admin/replies`. Either way it carries the request's `id`, by which this
    /// client knows it.
    public func report(sku: SKU? = nil, wait: Double = 10) async throws -> StoreReport {
        let id = Self.requestID()
        return try await query(topics.adminReport, payload: ReportRequest(sku: sku, id: id).payload, id: id, wait: wait) { (report: StoreReport) in
            report.id == id
        }
    }

    /// The requests the store set aside (admin), oldest first.
    public func deadLetters(wait: Double = 10) async throws -> DeadLetterList {
        let id = Self.requestID()
        return try await query(topics.adminDeadLetters, payload: ReportRequest(id: id).payload, id: id, wait: wait) { (list: DeadLetterList) in
            list.id == id
        }
    }

    /// Replays or drops one dead letter (admin), and waits for the store's answer.
    public func deadLetter(_ action: DeadLetterAction, wait: Double = 10) async throws -> DeadLetterOutcome {
        let kind = if case .replay = action { "replay" } else { "drop" }
        return try await request(
            topics.adminDeadLetter, payload: action.payload, answer: topics.adminReplies, errors: topics.adminErrors, wait: wait,
            accepting: { $0.deadLetter == action.id && $0.action == kind })
    }

    private func query<Answer: Decodable & Sendable>(
        _ topic: String, payload: [UInt8], id: String, wait: Double, accepting: @escaping @Sendable (Answer) -> Bool
    ) async throws -> Answer {
        let v5 = connection.protocolVersion == .v5
        let reply = v5 ? "\(topics.adminReplies)/\(id)" : topics.adminReplies
        let properties = v5 ? MQTTMessageProperties(responseTopic: reply, correlationData: Array(id.utf8)) : MQTTMessageProperties()
        // A store connected over 3.1.1 never sees the response topic and answers on admin/replies, by the id: an MQTT 5
        // client listens there too (found by the outside trial: it said the store did not answer).
        return try await request(
            topic, payload: payload, answer: "\(topics.adminReplies)/#", errors: topics.adminErrors, wait: wait, accepting: accepting,
            properties: properties, answerSubscriptions: v5 ? [reply, topics.adminReplies] : [reply])
    }

    /// A fresh identifier for one request: `r` and 16 hex digits.
    static func requestID() -> String { "r" + String(UInt64.random(in: 0...UInt64.max), radix: 16) }
}
