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

    /// A JSON number that must be a whole number within ±10^15, so that `1.5` or `1e300` is refused
    /// with the name of its field.
    private struct WholeNumber: Decodable {
        var value: Int
        init(_ value: Int) { self.value = value }
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let integer = try? container.decode(Int.self), abs(integer) <= 1_000_000_000_000_000 {
                value = integer
                return
            }
            let number = try container.decode(Double.self)
            guard number.rounded() == number, abs(number) <= 1e15 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a whole number in range")
            }
            value = Int(number)
        }
    }

    private struct SubscribeBody: Decodable {
        var sku: String
        var mode: String?
        var minQuantity: WholeNumber?
    }

    private struct UnsubscribeBody: Decodable {
        var sku: String?
        var all: Bool?
    }

    private struct StockBody: Decodable {
        var sku: String
        var set: WholeNumber?
        var add: WholeNumber?
    }

    /// Decodes a subscribe request of `customer`.
    public static func subscribe(_ customer: CustomerID, payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        let body: SubscribeBody
        switch try parse(payload) {
        case .bare(let sku): body = SubscribeBody(sku: sku)
        case .object(let data): body = try decode(SubscribeBody.self, from: data)
        }
        let mode: WatchMode
        switch body.mode {
        case nil: mode = .once
        case let text?:
            guard let parsed = WatchMode(rawValue: text) else {
                throw RequestRefusal(code: "invalid-mode", detail: "mode must be \"once\" or \"every\", not \(String(reflecting: text))")
            }
            mode = parsed
        }
        let minQuantity = body.minQuantity?.value ?? 1
        guard minQuantity >= 1 else { throw RequestRefusal(.invalidMinQuantity(minQuantity)) }
        return .subscribe(customer, try sku(body.sku), mode: mode, minQuantity: minQuantity)
    }

    /// Decodes an unsubscribe request of `customer`.
    public static func unsubscribe(_ customer: CustomerID, payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        let body: UnsubscribeBody
        switch try parse(payload) {
        case .bare(let sku): body = UnsubscribeBody(sku: sku)
        case .object(let data): body = try decode(UnsubscribeBody.self, from: data)
        }
        if body.all == true {
            guard body.sku == nil else {
                throw RequestRefusal(code: "invalid-field", detail: "give either \"sku\" or \"all\":true, not both")
            }
            return .unsubscribeAll(customer)
        }
        guard let text = body.sku else {
            throw RequestRefusal(code: "invalid-field", detail: "an unsubscribe request needs \"sku\" or \"all\":true")
        }
        return .unsubscribe(customer, try sku(text))
    }

    /// Decodes an admin stock request.
    public static func stock(payload: [UInt8]) throws(RequestRefusal) -> StoreRequest {
        guard case .object(let data) = try parse(payload) else {
            throw RequestRefusal(code: "invalid-json", detail: #"a stock request is a JSON object: {"sku":"…","set":N} or {"sku":"…","add":N}"#)
        }
        let body = try decode(StockBody.self, from: data)
        let item = try sku(body.sku)
        switch (body.set?.value, body.add?.value) {
        case (let quantity?, nil):
            guard quantity >= 0 else { throw RequestRefusal(.negativeStock(quantity)) }
            return .stock(item, .set(quantity))
        case (nil, let delta?):
            return .stock(item, .add(delta))
        default:
            throw RequestRefusal(code: "invalid-field", detail: "a stock request needs exactly one of \"set\" and \"add\"")
        }
    }

    private enum Parsed {
        case bare(String)
        case object(Data)
    }

    /// Size, UTF-8, and the choice between a JSON object and a bare SKU.
    private static func parse(_ payload: [UInt8]) throws(RequestRefusal) -> Parsed {
        guard payload.count <= maximumPayloadSize else {
            throw RequestRefusal(code: "payload-too-large", detail: "the payload is \(payload.count) bytes; the limit is \(maximumPayloadSize)")
        }
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
        return .object(Data(trimmed.utf8))
    }

    private static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(RequestRefusal) -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw RequestRefusal(code: "invalid-field", detail: "the request needs \"\(key.stringValue)\"")
        } catch DecodingError.typeMismatch(let expected, let context) where !context.codingPath.isEmpty {
            throw RequestRefusal(code: "invalid-field", detail: "\"\(field(context))\" must be \(describe(expected))")
        } catch DecodingError.valueNotFound(let expected, let context) where !context.codingPath.isEmpty {
            throw RequestRefusal(code: "invalid-field", detail: "\"\(field(context))\" must be \(describe(expected))")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            throw RequestRefusal(code: "invalid-field", detail: "\"\(field(context))\" must be a whole number")
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

    private static func sku(_ text: String) throws(RequestRefusal) -> SKU {
        do {
            return try SKU(text)
        } catch {
            throw RequestRefusal(error)
        }
    }
}
