import Foundation
import RestockCore

// One definition per request: the client encodes these, the store decodes them, and each number is checked
// by one function of ``RequestLimits`` (the core's own check).

/// A subscribe request: what `P/{store}/subscribe/{customer}` carries.
public struct SubscribeRequest: Sendable, Hashable {
    /// The SKU to watch.
    public let sku: SKU
    /// `once` (the default) or `every`.
    public let mode: WatchMode
    /// The on-hand quantity at which the watch is satisfied (1 by default).
    public let minQuantity: Int
    /// When the watch ends unalerted, on the store's clock; `nil`: the store's `--watch-lifetime` from when it applies
    /// the request. Kept to the millisecond, as it is sent.
    public let expiresAt: Date?

    /// - Throws: `invalid-min-quantity` when `minQuantity` is outside ``RequestLimits/minQuantity``.
    public init(sku: SKU, mode: WatchMode = .once, minQuantity: Int = 1, expiresAt: Date? = nil) throws(RequestRefusal) {
        self.sku = sku
        self.mode = mode
        self.expiresAt = expiresAt.map(SubscribeRequest.toTheMillisecond)
        do {
            self.minQuantity = try RequestLimits.checkMinQuantity(minQuantity)
        } catch {
            throw RequestRefusal(error)
        }
    }

    /// Decodes a payload: a JSON object `{"sku","mode"?,"minQuantity"?}`, or a bare SKU.
    public init(payload: [UInt8]) throws(RequestRefusal) {
        let sku: String
        var modeText: String?
        var minQuantityNumber: JSONNumber?
        var expiresAtText: String?
        switch try RequestDecoder.parse(payload) {
        case .bare(let text): sku = text
        case .object(let object):
            sku = try object.requiredString("sku")
            modeText = try object.string("mode")
            minQuantityNumber = try object.number("minQuantity")
            expiresAtText = try object.string("expiresAt")
        }
        let mode: WatchMode
        switch modeText {
        case nil: mode = .once
        case let text?:
            guard let parsed = WatchMode(rawValue: text) else {
                throw RequestRefusal(code: .invalidMode, detail: "mode must be \"once\" or \"every\", not \(String(reflecting: text))")
            }
            mode = parsed
        }
        let minQuantity =
            try minQuantityNumber?.integer("minQuantity", in: RequestLimits.minQuantity, outOfRange: RestockError.invalidMinQuantity) ?? 1
        var expiresAt: Date?
        if let expiresAtText {
            guard let date = RFC3339.date(expiresAtText) else {
                throw RequestRefusal(
                    code: .invalidExpiresAt,
                    detail: "expiresAt must be a time in UTC as RFC 3339 writes it, such as \"2027-05-20T12:00:00Z\", not \(String(reflecting: String(expiresAtText.prefix(40))))")
            }
            expiresAt = date
        }
        try self.init(sku: try RequestDecoder.sku(sku), mode: mode, minQuantity: minQuantity, expiresAt: expiresAt)
    }

    /// The JSON payload, defaults left out: `{"sku":"ipad"}`, `{"minQuantity":2,"mode":"every","sku":"ipad"}`,
    /// `{"expiresAt":"2027-05-20T12:00:00.000Z","sku":"ipad"}`.
    public var payload: [UInt8] {
        Body(
            sku: sku.rawValue, mode: mode == .once ? nil : mode.rawValue, minQuantity: minQuantity == 1 ? nil : minQuantity,
            expiresAt: expiresAt.map(Timestamp.string(from:))
        ).payloadBytes()
    }

    /// `date` at its millisecond, as the payload carries it, so that a request and its payload agree: the nearest
    /// millisecond and 0.4 ms more, which the store's timestamps (cut to the millisecond) write as that millisecond, and
    /// which this function keeps as it is.
    static func toTheMillisecond(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000 + 0.0004)
    }

    /// What the client encodes (nil fields are left out).
    private struct Body: Encodable {
        var sku: String
        var mode: String?
        var minQuantity: Int?
        var expiresAt: String?
    }
}

/// An unsubscribe request: what `P/{store}/unsubscribe/{customer}` carries.
public enum UnsubscribeRequest: Sendable, Hashable {
    /// End the watch of one SKU.
    case sku(SKU)
    /// End every watch of the customer.
    case all

    /// Decodes a payload: `{"sku":"…"}`, a bare SKU, or `{"all":true}`.
    public init(payload: [UInt8]) throws(RequestRefusal) {
        let body: Body
        switch try RequestDecoder.parse(payload) {
        case .bare(let sku): body = Body(sku: sku)
        case .object(let object): body = Body(sku: try object.string("sku"), all: try object.bool("all"))
        }
        if body.all == true {
            guard body.sku == nil else {
                throw RequestRefusal(code: .invalidField, detail: "give either \"sku\" or \"all\":true, not both")
            }
            self = .all
            return
        }
        guard let text = body.sku else {
            throw RequestRefusal(code: .invalidField, detail: "an unsubscribe request needs \"sku\" or \"all\":true")
        }
        self = .sku(try RequestDecoder.sku(text))
    }

    /// The JSON payload: `{"sku":"ipad"}` or `{"all":true}`.
    public var payload: [UInt8] {
        switch self {
        case .sku(let sku): Body(sku: sku.rawValue).payloadBytes()
        case .all: Body(all: true).payloadBytes()
        }
    }

    /// What the client encodes and the store reads (nil fields are left out, or were not given).
    private struct Body: Encodable {
        var sku: String?
        var all: Bool?
    }
}

/// A stock change by the admin: what `P/{store}/admin/stock` carries.
public struct StockRequest: Sendable, Hashable {
    /// The SKU whose stock changes.
    public let sku: SKU
    /// Set to a quantity, or add (or remove) some.
    public let change: StockChange

    /// - Throws: `stock-change-out-of-range` when the number is outside ``RequestLimits/stockSet`` or
    ///   ``RequestLimits/stockAdd``.
    public init(sku: SKU, change: StockChange) throws(RequestRefusal) {
        self.sku = sku
        do {
            self.change = try RequestLimits.check(change)
        } catch {
            throw RequestRefusal(error)
        }
    }

    /// Decodes a payload: `{"sku":"…","set":N}` or `{"sku":"…","add":N}`.
    public init(payload: [UInt8]) throws(RequestRefusal) {
        let shape = #"a stock request is a JSON object: {"sku":"…","set":N} or {"sku":"…","add":N}"#
        guard case .object(let object) = try RequestDecoder.parse(payload, notAnObject: shape) else {
            throw RequestRefusal(code: .invalidJSON, detail: shape)
        }
        let text = try object.requiredString("sku")
        let set = try object.number("set")
        let add = try object.number("add")
        let item = try RequestDecoder.sku(text)
        switch (set, add) {
        case (let quantity?, nil):
            try self.init(sku: item, change: .set(try quantity.integer("set", in: RequestLimits.stockSet) { .stockChangeOutOfRange(field: "set", value: $0) }))
        case (nil, let delta?):
            try self.init(sku: item, change: .add(try delta.integer("add", in: RequestLimits.stockAdd) { .stockChangeOutOfRange(field: "add", value: $0) }))
        default:
            throw RequestRefusal(code: .invalidField, detail: "a stock request needs exactly one of \"set\" and \"add\"")
        }
    }

    /// The JSON payload: `{"set":3,"sku":"ipad"}` or `{"add":-2,"sku":"ipad"}`.
    public var payload: [UInt8] {
        switch change {
        case .set(let quantity): Body(sku: sku.rawValue, set: quantity).payloadBytes()
        case .add(let delta): Body(sku: sku.rawValue, add: delta).payloadBytes()
        }
    }

    /// What the client encodes (nil fields are left out).
    private struct Body: Encodable {
        var sku: String
        var set: Int?
        var add: Int?
    }
}
