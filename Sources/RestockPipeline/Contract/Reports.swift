import Foundation
import RestockCore

/// A request for the store's report: what `P/{store}/admin/report` carries (docs/contract.md, "Reports"). An empty
/// payload, or a JSON object with an optional `sku` (the figures of that SKU only) and an optional `id` (an identifier
/// the reply carries back, for clients without MQTT 5's correlation data).
public struct ReportRequest: Sendable, Hashable {
    /// Only this SKU's figures; all of them when `nil`.
    public let sku: SKU?
    /// What the reply carries back as its `id`.
    public let id: String?

    /// A request for the report of `sku` (every SKU when `nil`).
    public init(sku: SKU? = nil, id: String? = nil) {
        self.sku = sku
        self.id = id
    }

    /// What refusing a report request that is neither empty nor a JSON object says.
    public static let shape = #"a report request is empty or a JSON object: {"sku":"…"}"#
    /// What refusing a dead-letter list request that is neither empty nor a JSON object says.
    public static let deadLetterListShape = #"a dead-letter list request is empty or a JSON object: {"id":"…"}"#

    /// Decodes a payload: empty (or only whitespace), or `{"sku"?,"id"?}`.
    /// - Throws: `invalid-json` for anything else than an empty payload or a JSON object, `invalid-field` for a field of
    ///   the wrong type or an `id` that is not an identifier, `invalid-sku`.
    /// - Parameter shape: What the refusal of anything but an empty payload or a JSON object says (a dead-letter list
    ///   request is read the same way, and says so).
    public init(payload: [UInt8], shape: String = Self.shape) throws(RequestRefusal) {
        if payload.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            self.init()
            return
        }
        guard case .object(let object) = try RequestDecoder.parse(payload, notAnObject: shape) else {
            throw RequestRefusal(code: .invalidJSON, detail: shape)
        }
        let sku = try object.string("sku").map { (text) throws(RequestRefusal) in try RequestDecoder.sku(text) }
        let id = try object.string("id")
        if let id, (try? CustomerID(id)) == nil {
            throw RequestRefusal(code: .invalidField, detail: "\"id\" must be 1 to 64 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit")
        }
        self.init(sku: sku, id: id)
    }

    /// The JSON payload: `{}`, `{"sku":"ipad"}`, `{"id":"r1","sku":"ipad"}`.
    public var payload: [UInt8] { Body(sku: sku?.rawValue, id: id).payloadBytes() }

    private struct Body: Encodable {
        var sku: String?
        var id: String?
    }
}

/// The store's report, its reply to a ``ReportRequest``: customers and watches now, and per SKU how many watch it,
/// how many of them wait for an alert, and the alerts raised and acknowledged by the broker over the store's life and
/// the last 24 hours (to the hour, on the store's clock).
public struct StoreReport: Codable, Sendable, Hashable {
    /// Counts over two windows.
    public struct Window: Codable, Sendable, Hashable {
        /// Since the store's data directory was made (since the upgrade that brought reports, for an older one).
        public var life: Int
        /// In the current hour and the 23 before it.
        public var last24h: Int
        /// Counts of `life` and `last24h`.
        public init(life: Int, last24h: Int) {
            self.life = life
            self.last24h = last24h
        }
    }

    /// One SKU's figures.
    public struct SKUFigures: Codable, Sendable, Hashable {
        /// The SKU.
        public var sku: String
        /// Watches of it now.
        public var watching: Int
        /// Of those, the ones waiting for an alert (an `every` watch alerted waits again once stock falls below its
        /// minimum).
        public var waiting: Int
        /// Alerts raised.
        public var alertsRaised = Window(life: 0, last24h: 0)
        /// Alerts the broker acknowledged (delivered to it; it hands them to the customer's session).
        public var alertsAcknowledged = Window(life: 0, last24h: 0)

        /// The figures of `sku`, with no alerts counted yet.
        package init(sku: String, watching: Int, waiting: Int) {
            self.sku = sku
            self.watching = watching
            self.waiting = waiting
        }
    }

    /// The store (set by the store as it replies).
    public var store = ""
    /// The `id` of the request, when it had one.
    public var id: String?
    /// When the store made it (RFC 3339).
    public var at = ""
    /// Customers with a watch (of the SKU, for a request of one).
    public var customers: Int
    /// Watches.
    public var watches: Int
    /// Alerts raised, every SKU together.
    public var alertsRaised: Window
    /// Alerts acknowledged, every SKU together.
    public var alertsAcknowledged: Window
    /// Per SKU, in SKU order.
    public var skus: [SKUFigures]
}
