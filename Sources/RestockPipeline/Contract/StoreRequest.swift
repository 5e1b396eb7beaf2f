import Foundation
import RestockCore

/// A request to the store, decoded from a topic and a payload (docs/contract.md, "Requests").
public enum StoreRequest: Sendable, Hashable {
    case subscribe(CustomerID, SKU, mode: WatchMode, minQuantity: Int, expiresAt: Date? = nil)
    case unsubscribe(CustomerID, SKU)
    case unsubscribeAll(CustomerID)
    case stock(SKU, StockChange)
    /// Forget everything about a customer (admin).
    case forget(CustomerID)
    /// Replay or drop a dead letter (admin).
    case deadLetter(DeadLetterAction)
}

/// Why a request was refused: a stable code and one human sentence, as published on the errors topics.
public struct RequestRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code the error report carries.
    public let code: RefusalCode
    /// One sentence naming the problem and the limit.
    public let detail: String
    /// A refusal with `code` and `detail`.
    public init(code: RefusalCode, detail: String) {
        self.code = code
        self.detail = detail
    }
    /// `code: detail`.
    public var description: String { "\(code.rawValue): \(detail)" }

    /// The refusal of a request the core refused with `error` (``RestockError/refusalCode`` is set for every error a
    /// request can cause; anything else is a bad field).
    init(_ error: RestockError) {
        self.init(code: error.refusalCode ?? .invalidField, detail: error.description)
    }
}

/// Turns payloads into ``StoreRequest``s, refusing anything malformed with a clear reason.
public enum RequestDecoder {
    /// The largest request payload accepted.
    public static let maximumPayloadSize = 4 * 1024

    /// Decodes a subscribe request of `customer`.
    public static func subscribe(_ customer: CustomerID, payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        let request = try SubscribeRequest(payload: payload)
        return .subscribe(customer, request.sku, mode: request.mode, minQuantity: request.minQuantity, expiresAt: request.expiresAt)
    }

    /// Decodes an unsubscribe request of `customer`.
    public static func unsubscribe(_ customer: CustomerID, payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        switch try UnsubscribeRequest(payload: payload) {
        case .sku(let sku): .unsubscribe(customer, sku)
        case .all: .unsubscribeAll(customer)
        }
    }

    /// Decodes an admin stock request.
    public static func stock(payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        let request = try StockRequest(payload: payload)
        return .stock(request.sku, request.change)
    }

    /// Decodes an admin forget request.
    public static func forget(payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        .forget(try ForgetRequest(payload: payload).customer)
    }

    /// Decodes an admin dead-letter request.
    public static func deadLetter(payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        .deadLetter(try DeadLetterAction(payload: payload))
    }

    /// The refusal of a payload of `size` bytes, over ``maximumPayloadSize``.
    public static func tooLarge(_ size: Int) -> RequestRefusal {
        RequestRefusal(code: .payloadTooLarge, detail: "the payload is \(size) bytes; the limit is \(maximumPayloadSize)")
    }

    /// The refusal of a request that came with the retain flag: requests are live messages, never replayed.
    public static let retainedRequest = RequestRefusal(
        code: .retainedRequest,
        detail: "a request published with the retain flag is never applied: publish it again without retain (mosquitto_pub without -r)")

    enum Parsed {
        case bare(String)
        case object(RequestObject)
    }

    /// Size, UTF-8, and the choice between a JSON object and a bare SKU. A request that can only be a JSON object
    /// names its own shape in `notAnObject`: anything else (a bare word, an array, a string) is refused with it.
    static func parse(_ payload: [UInt8], notAnObject: String? = nil) throws(RequestRefusal) -> Parsed {
        guard payload.count <= maximumPayloadSize else { throw tooLarge(payload.count) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw RequestRefusal(code: .invalidUTF8, detail: "the payload is not valid UTF-8")
        }
        // A payload that begins and ends with printable ASCII has nothing to trim (the usual one: `{…}`); Foundation's
        // trimming took a fifth of the time a stock change was applied in (docs/benchmarks.md, B4).
        let untrimmed = payload.first.map(Self.isPrintableASCII) == true && payload.last.map(Self.isPrintableASCII) == true
        var trimmed = untrimmed ? text : text.trimmingCharacters(in: .whitespacesAndNewlines)
        // A byte order mark, as some editors write before JSON, is ignored once, before or after the leading
        // whitespace (RFC 8259, section 8.1, lets a parser ignore it); a second one is part of the payload.
        if trimmed.unicodeScalars.first == "\u{FEFF}" {
            trimmed = String(trimmed.unicodeScalars.dropFirst()).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard trimmed.hasPrefix("{") else {
            if let notAnObject { throw RequestRefusal(code: .invalidJSON, detail: notAnObject) }
            if trimmed.hasPrefix("[") || trimmed.hasPrefix("\"") {
                throw RequestRefusal(code: .invalidJSON, detail: "the payload must be a JSON object or a bare SKU")
            }
            return .bare(trimmed)
        }
        do {
            return .object(RequestObject(members: try StrictJSON.members(in: Array(trimmed.utf8))))
        } catch {
            throw RequestRefusal(code: .invalidJSON, detail: "the payload is not a valid JSON object: \(error.reason)")
        }
    }

    /// Whether `byte` is printable ASCII other than a space: never trimmed as white space, never part of a byte order mark.
    private static func isPrintableASCII(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F }

    static func sku(_ text: String) throws(RequestRefusal) -> SKU {
        do {
            return try SKU(text)
        } catch {
            throw RequestRefusal(error)
        }
    }
}

/// The top-level members of a request object, read field by field: a field that is absent or `null` is not
/// given, one of the wrong type is `invalid-field` naming it, unknown fields are never looked at
/// (docs/contract.md, "How a request payload is read").
struct RequestObject {
    let members: [StrictJSON.Member]

    /// The value of the member `name`, `null` included; names are compared byte for byte, as StrictJSON
    /// compares them to refuse a name given twice.
    func member(_ name: String) -> JSONValue? {
        members.first { $0.name.utf8.elementsEqual(name.utf8) }?.value
    }

    /// The string `name`, which must be given.
    func requiredString(_ name: String) throws(RequestRefusal) -> String {
        guard let value = member(name) else { throw RequestRefusal(code: .invalidField, detail: "the request needs \"\(name)\"") }
        guard case .string(let text) = value else { throw Self.wrongType(name, "a string") }
        return text
    }

    /// The string `name`, or `nil` when it is not given.
    func string(_ name: String) throws(RequestRefusal) -> String? {
        switch member(name) {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Self.wrongType(name, "a string")
        }
    }

    /// The boolean `name`, or `nil` when it is not given.
    func bool(_ name: String) throws(RequestRefusal) -> Bool? {
        switch member(name) {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        default: throw Self.wrongType(name, "true or false")
        }
    }

    /// The number `name`, or `nil` when it is not given; whether it is a whole number in range is
    /// ``JSONNumber/integer(_:in:outOfRange:)``'s to say.
    func number(_ name: String) throws(RequestRefusal) -> JSONNumber? {
        switch member(name) {
        case nil, .null?: return nil
        case .number(let number)?: return number
        default: throw Self.wrongType(name, "an integer")
        }
    }

    static func wrongType(_ name: String, _ expected: String) -> RequestRefusal {
        RequestRefusal(code: .invalidField, detail: "\"\(name)\" must be \(expected)")
    }
}

extension JSONNumber {
    /// The number when it is a whole number within `range`; never traps, whatever was written.
    /// - Throws: `invalid-field` when it is not a whole number; `outOfRange` (given the number, as written and
    ///   cut short when beyond `Int`) when it is a whole number outside `range`.
    func integer(_ field: String, in range: ClosedRange<Int>, outOfRange: (String) -> RestockError) throws(RequestRefusal) -> Int {
        switch value {
        case .integer(let integer) where range.contains(integer): return integer
        case .integer(let integer): throw RequestRefusal(outOfRange(String(integer)))
        case .beyondInt: throw RequestRefusal(outOfRange(description))
        case .fraction:
            throw RequestRefusal(
                code: .invalidField, detail: "\"\(field)\" must be an integer from \(RequestLimits.describe(range)), not \(description)")
        }
    }
}
