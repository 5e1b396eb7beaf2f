import Foundation
import RestockCore

/// A request to the store, decoded from a topic and a payload (DESIGN §3).
public enum StoreRequest: Sendable, Hashable {
    case subscribe(CustomerID, SKU, mode: WatchMode, minQuantity: Int)
    case unsubscribe(CustomerID, SKU)
    case unsubscribeAll(CustomerID)
    case stock(SKU, StockChange)
}

/// Why a request was refused: a stable code and one human sentence, as published on the errors topics.
public struct RequestRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let detail: String
    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }
    public var description: String { "\(code): \(detail)" }

    init(_ error: RestockError) {
        self.init(code: error.code, detail: error.description)
    }
}

/// Turns payloads into ``StoreRequest``s, refusing anything malformed with a clear reason.
public enum RequestDecoder {
    /// The largest request payload accepted.
    public static let maximumPayloadSize = 4 * 1024

    /// A JSON number as a request gives it. Decoding never fails on a number and never traps: a whole number
    /// too large for `Int` or a fraction is kept as text, and refused with the field's own range.
    enum RequestNumber: Codable {
        /// A whole number that fits in `Int` (3, 3.0, 3e0 and -0 are whole).
        case whole(Int)
        /// A whole number beyond `Int`, such as 1e19.
        case wholeBeyondRange(String)
        /// A number with a fractional part.
        case fraction(String)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let integer = try? container.decode(Int.self) {
                self = .whole(integer)
                return
            }
            // Strings, booleans and the like fail here, as a type mismatch naming the field.
            let number = try container.decode(Double.self)
            guard number.isFinite, number.rounded() == number else {
                self = .fraction(number.description)
                return
            }
            // Exactly representable, so the conversion cannot trap.
            if number.magnitude < 9e15 {
                self = .whole(Int(number))
            } else {
                self = .wholeBeyondRange(number.description)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .whole(let value): try container.encode(value)
            case .wholeBeyondRange(let text), .fraction(let text): try container.encode(Double(text) ?? .nan)
            }
        }

        /// The number when it is a whole number within `range`.
        /// - Throws: `invalid-field` for a fraction; `outOfRange` for a whole number outside `range`.
        func integer(
            _ field: String, in range: ClosedRange<Int>, outOfRange: (String) -> RestockError
        ) throws(RequestRefusal) -> Int {
            switch self {
            case .whole(let value) where range.contains(value): return value
            case .whole(let value): throw RequestRefusal(outOfRange(String(value)))
            case .wholeBeyondRange(let text): throw RequestRefusal(outOfRange(text))
            case .fraction(let text):
                throw RequestRefusal(
                    code: "invalid-field", detail: "\"\(field)\" must be an integer from \(RequestLimits.describe(range)), not \(text)")
            }
        }
    }

    /// Decodes a subscribe request of `customer`.
    public static func subscribe(_ customer: CustomerID, payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        let request = try SubscribeRequest(payload: payload)
        return .subscribe(customer, request.sku, mode: request.mode, minQuantity: request.minQuantity)
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

    /// The refusal of a payload of `size` bytes, over ``maximumPayloadSize``.
    public static func tooLarge(_ size: Int) -> RequestRefusal {
        RequestRefusal(code: "payload-too-large", detail: "the payload is \(size) bytes; the limit is \(maximumPayloadSize)")
    }

    /// The refusal of a request that came with the retain flag: requests are live messages, never replayed.
    public static let retainedRequest = RequestRefusal(
        code: "retained-request",
        detail: "a request published with the retain flag is never applied: publish it again without retain (mosquitto_pub without -r)")

    enum Parsed {
        case bare(String)
        case object(Data)
    }

    /// Size, UTF-8, and the choice between a JSON object and a bare SKU.
    static func parse(_ payload: [UInt8]) throws(RequestRefusal) -> Parsed {
        guard payload.count <= maximumPayloadSize else { throw tooLarge(payload.count) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw RequestRefusal(code: "invalid-utf8", detail: "the payload is not valid UTF-8")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("{") else {
            if trimmed.hasPrefix("[") || trimmed.hasPrefix("\"") {
                throw RequestRefusal(code: "invalid-json", detail: "the payload must be a JSON object or a bare SKU")
            }
            return .bare(trimmed)
        }
        let bytes = Array(trimmed.utf8)
        if let problem = StrictJSON.problem(in: bytes) {
            throw RequestRefusal(code: "invalid-json", detail: "the payload is not a valid JSON object: \(problem)")
        }
        return .object(Data(bytes))
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(RequestRefusal) -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw RequestRefusal(code: "invalid-field", detail: "the request needs \"\(key.stringValue)\"")
        } catch DecodingError.typeMismatch(let expected, let context) where !context.codingPath.isEmpty {
            throw RequestRefusal(code: "invalid-field", detail: "\"\(field(context))\" must be \(describe(expected))")
        } catch DecodingError.valueNotFound(let expected, let context) where !context.codingPath.isEmpty {
            throw RequestRefusal(code: "invalid-field", detail: "\"\(field(context))\" must be \(describe(expected))")
        } catch {
            throw RequestRefusal(code: "invalid-json", detail: "the payload is not a valid JSON object")
        }
    }

    private static func field(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue).joined(separator: ".")
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type, is Double.Type: "an integer"
        case is Bool.Type: "true or false"
        case is String.Type: "a string"
        default: "of another type"
        }
    }

    static func sku(_ text: String) throws(RequestRefusal) -> SKU {
        do {
            return try SKU(text)
        } catch {
            throw RequestRefusal(error)
        }
    }
}
