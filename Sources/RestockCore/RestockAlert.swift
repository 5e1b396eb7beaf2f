import Foundation

/// The push payload: one alert to one customer that a watched SKU is back (docs/contract.md, "Semantics", version 1).
///
/// It encodes exactly `{"version":1,"id","store","customer","sku","quantity","position","message","at"}`.
/// Decoding ignores fields it does not know, so later versions can add fields without breaking observers.
///
/// An alert the store raises keeps its id and sentence as the numbers they are made from, and writes them
/// out only when read or encoded: an in-process observer that never reads them never pays for the text.
public struct RestockAlert: Codable, Sendable, Hashable, Identifiable {
    /// The payload version this type writes.
    public static let currentVersion = 1

    /// Payload version; 1.
    public var version: Int
    /// Unique per alert, and the same on every redelivery of it: consumers drop an id they have seen. A store's own
    /// alert has `{store}-{epoch}-{sequence}` (or `{store}-{sequence}` without an epoch; see ``Store/alertEpoch``).
    public var id: String {
        get { idText ?? storedEpoch.map { "\(store)-\($0)-\(storedSequence)" } ?? "\(store)-\(storedSequence)" }
        set { idText = newValue }
    }
    /// The store that raised the alert.
    public var store: StoreID
    /// The customer alerted.
    public var customer: CustomerID
    /// The SKU that is back.
    public var sku: SKU
    /// The on-hand quantity when the alert was raised.
    public var quantity: Int
    /// The position of the watch that raised it.
    public var position: UInt64
    /// A human sentence.
    public var message: String {
        get { messageText ?? Self.message(customer: customer, sku: sku, store: store, quantity: quantity) }
        set { messageText = newValue }
    }
    /// When the alert was raised.
    public var at: Date

    /// The id as given (decoded or set), or `nil` while it is the store's `{store}-{sequence}`.
    private var idText: String?
    /// The store's alert sequence number the id is made from, for an alert as a store raised it (id and
    /// sentence its own, not set since); `nil` otherwise.
    public var sequence: UInt64? { idText == nil && messageText == nil ? storedSequence : nil }
    /// The epoch of the store that raised it (see ``Store/alertEpoch``), for an alert as a store raised it.
    public var epoch: String? { sequence == nil ? nil : storedEpoch }
    private var storedSequence: UInt64 = 0
    private var storedEpoch: String?
    /// The sentence as given, or `nil` while it is the standard one.
    private var messageText: String?

    /// Two alerts are equal when every field of their payload is.
    public static func == (lhs: RestockAlert, rhs: RestockAlert) -> Bool {
        lhs.version == rhs.version && lhs.store == rhs.store && lhs.customer == rhs.customer && lhs.sku == rhs.sku
            && lhs.quantity == rhs.quantity && lhs.position == rhs.position && lhs.at == rhs.at && lhs.id == rhs.id
            && lhs.message == rhs.message
    }

    /// Hashes the id and the customer.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(customer)
    }

    private enum CodingKeys: String, CodingKey {
        case version, id, store, customer, sku, quantity, position, message, at
    }

    /// Encodes the payload of docs/contract.md, "Alert".
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(id, forKey: .id)
        try container.encode(store, forKey: .store)
        try container.encode(customer, forKey: .customer)
        try container.encode(sku, forKey: .sku)
        try container.encode(quantity, forKey: .quantity)
        try container.encode(position, forKey: .position)
        try container.encode(message, forKey: .message)
        try container.encode(Timestamp.string(from: at), forKey: .at)
    }
}

// The initializers are in an extension, so that the struct keeps its memberwise initializer and theirs make the alert
// through it, as one value. An initializer that sets the fields one by one builds the alert in a variable and copies it
// out whole: every identifier retained and released once more per alert, nearly 40% of B1's time at 1,000 observers
// (docs/benchmarks.md, "B1, the alert copied whole").
extension RestockAlert {
    /// Creates an alert.
    public init(
        version: Int = RestockAlert.currentVersion, id: String, store: StoreID, customer: CustomerID, sku: SKU,
        quantity: Int, position: UInt64, message: String, at: Date
    ) {
        self.init(
            version: version, store: store, customer: customer, sku: sku, quantity: quantity, position: position, at: at,
            idText: id, storedSequence: 0, storedEpoch: nil, messageText: message)
    }

    /// The alert a store raises as its `sequence`-th of `epoch`: id `{store}-{epoch}-{sequence}` (`{store}-{sequence}`
    /// without an epoch) and the standard sentence, both written when read. A durable store rebuilds the alerts it has
    /// not yet published this way.
    public init(
        store: StoreID, epoch: String? = nil, sequence: UInt64, customer: CustomerID, sku: SKU, quantity: Int, position: UInt64, at: Date
    ) {
        self.init(
            version: Self.currentVersion, store: store, customer: customer, sku: sku, quantity: quantity, position: position, at: at,
            idText: nil, storedSequence: sequence, storedEpoch: epoch, messageText: nil)
    }

    /// Decodes an alert payload, ignoring fields it does not know.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        idText = try container.decode(String.self, forKey: .id)
        store = try container.decode(StoreID.self, forKey: .store)
        customer = try container.decode(CustomerID.self, forKey: .customer)
        sku = try container.decode(SKU.self, forKey: .sku)
        quantity = try container.decode(Int.self, forKey: .quantity)
        position = try container.decode(UInt64.self, forKey: .position)
        messageText = try container.decode(String.self, forKey: .message)
        let text = try container.decode(String.self, forKey: .at)
        guard let date = Timestamp.date(from: text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .at, in: container, debugDescription: "not an RFC 3339 timestamp: \(text)")
        }
        at = date
    }
}

extension RestockAlert {
    /// The alert as compact JSON with sorted keys: the bytes published on the customer's alerts topic.
    public func jsonData() -> Data {
        guard idText == nil, messageText == nil else {
            // Given text may need escaping: the encoder's way. Encoding strings and integers cannot fail: the empty
            // result is never taken.
            return (try? PayloadCoding.encoder.encode(self)) ?? Data()
        }
        // A store's own alert holds identifiers (`[A-Za-z0-9._-]`), numbers, a timestamp and the standard
        // sentence: nothing to escape, so it is written directly, byte for byte what the encoder writes.
        var json = #"{"at":""#
        json += Timestamp.string(from: at)
        json += #"","customer":""#
        json += customer.rawValue
        json += #"","id":""#
        json += id
        json += #"","message":""#
        json += message
        json += #"","position":"#
        json += String(position)
        json += #","quantity":"#
        json += String(quantity)
        json += #","sku":""#
        json += sku.rawValue
        json += #"","store":""#
        json += store.rawValue
        json += #"","version":"#
        json += String(version)
        json += "}"
        return Data(json.utf8)
    }

    /// Decodes an alert, ignoring unknown fields.
    /// - Throws: `DecodingError` when a known field is missing or of the wrong type.
    public init(jsonData: Data) throws {
        self = try JSONDecoder().decode(RestockAlert.self, from: jsonData)
    }

    /// The sentence an alert carries.
    static func message(customer: CustomerID, sku: SKU, store: StoreID, quantity: Int) -> String {
        "Good news, \(customer): \(sku) is back in stock at \(store) (\(quantity) available)."
    }
}

/// The one JSON style of every payload: compact, sorted keys, slashes unescaped.
public enum PayloadCoding {
    /// A fresh encoder each time: `JSONEncoder` is a class and not `Sendable`.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
