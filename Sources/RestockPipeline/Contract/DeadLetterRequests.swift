import Foundation
import RestockCore

/// The list of dead letters, the store's reply to a request on `P/{store}/admin/dead-letters` (docs/contract.md,
/// "Dead letters").
public struct DeadLetterList: Codable, Sendable, Hashable {
    /// One request set aside.
    public struct Entry: Codable, Sendable, Hashable {
        /// Its id: its place in the store's request log.
        public var id: Int64
        /// The topic it came on.
        public var topic: String
        /// The payload as UTF-8 text, when it is (the first 4096 bytes of a larger one).
        public var payload: String?
        /// The payload in base64, always.
        public var payloadBase64: String
        /// Its size as received.
        public var size: Int
        /// Whether it came with the retain flag.
        public var retained: Bool
        /// Why it was set aside: one sentence.
        public var reason: String
        /// When (RFC 3339).
        public var failedAt: String
    }

    /// The store.
    public var store = ""
    /// The `id` of the request, when it had one.
    public var id: String?
    /// When the store made the list (RFC 3339).
    public var at = ""
    /// The dead letters, oldest first.
    public var deadLetters: [Entry]

    /// A list of `deadLetters` of `store`, made at `at`, answering the request `id`.
    public init(store: String, id: String?, at: String, deadLetters: [Entry]) {
        self.store = store
        self.id = id
        self.at = at
        self.deadLetters = deadLetters
    }
}

extension DeadLetterList.Entry {
    /// The entry of `request`, set aside for `reason` at `failedAt` (seconds since 1970, as every backend keeps it).
    package init(_ request: JournaledRequest, reason: String, failedAt: Double) {
        id = request.seq
        topic = request.topic
        payload = String(validating: request.payload, as: UTF8.self)
        payloadBase64 = Data(request.payload).base64EncodedString()
        size = request.size
        retained = request.retained
        self.reason = reason
        self.failedAt = Timestamp.string(from: Date(timeIntervalSince1970: failedAt))
    }

    /// The entry of a row of SQLite's dead-letter table.
    init(_ record: DeadLetterRecord) {
        self.init(record.request, reason: record.reason, failedAt: record.failedAt)
    }
}

/// What to do with one dead letter: what `P/{store}/admin/dead-letter` carries, `{"replay":ID}` or `{"drop":ID}`.
public enum DeadLetterAction: Sendable, Hashable {
    /// Apply the request set aside again, as it came; it leaves the list.
    case replay(Int64)
    /// Remove it from the list, unapplied.
    case drop(Int64)

    /// The dead letter's id.
    public var id: Int64 {
        switch self {
        case .replay(let id), .drop(let id): id
        }
    }

    /// Decodes a payload: `{"replay":ID}` or `{"drop":ID}`, ID a whole number from 1.
    /// - Throws: `invalid-json` for anything but a JSON object; `invalid-field` without exactly one of the two, or an
    ///   id that is not a whole number from 1 to 2^63 - 1.
    public init(payload: [UInt8]) throws(RequestRefusal) {
        let shape = #"a dead-letter request is a JSON object: {"replay":ID} or {"drop":ID}"#
        guard case .object(let object) = try RequestDecoder.parse(payload, notAnObject: shape) else {
            throw RequestRefusal(code: .invalidJSON, detail: shape)
        }
        let replay = try object.number("replay")
        let drop = try object.number("drop")
        let range = 1...Int.max
        func id(_ number: JSONNumber, _ field: String) throws(RequestRefusal) -> Int64 {
            Int64(try number.integer(field, in: range) { .stockChangeOutOfRange(field: field, value: $0) })
        }
        switch (replay, drop) {
        case (let number?, nil): self = .replay(try Self.refusingRange { () throws(RequestRefusal) in try id(number, "replay") })
        case (nil, let number?): self = .drop(try Self.refusingRange { () throws(RequestRefusal) in try id(number, "drop") })
        default: throw RequestRefusal(code: .invalidField, detail: #"a dead-letter request needs exactly one of "replay" and "drop""#)
        }
    }

    /// An id out of range is a bad field, not a quantity.
    private static func refusingRange(_ body: () throws(RequestRefusal) -> Int64) throws(RequestRefusal) -> Int64 {
        do {
            return try body()
        } catch where error.code == .invalidQuantity {
            throw RequestRefusal(code: .invalidField, detail: "a dead letter's id is a whole number from 1 (restock dead-letters lists them)")
        }
    }

    /// The JSON payload: `{"replay":3}` or `{"drop":3}`.
    public var payload: [UInt8] {
        switch self {
        case .replay(let id): Body(replay: id).payloadBytes()
        case .drop(let id): Body(drop: id).payloadBytes()
        }
    }

    private struct Body: Encodable {
        var replay: Int64?
        var drop: Int64?
    }
}

/// The store's answer to a ``DeadLetterAction``, on `P/{store}/admin/replies`.
public struct DeadLetterOutcome: Codable, Sendable, Hashable {
    /// The store.
    public var store: String
    /// `replay` or `drop`, as asked.
    public var action: String
    /// The dead letter's id.
    public var deadLetter: Int64
    /// `replayed` (applied again: its own answer went to its sender), `dropped`, or `unknown` (no such dead letter).
    public var outcome: String
    /// When (RFC 3339).
    public var at: String
}
