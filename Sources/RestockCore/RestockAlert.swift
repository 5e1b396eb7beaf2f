import Foundation

/// The push payload: one alert to one customer that a watched SKU is back (DESIGN §4, version 1).
///
/// It encodes exactly `{"version":1,"id","store","customer","sku","quantity","position","message","at"}`.
/// Decoding ignores fields it does not know, so later versions can add fields without breaking observers.
public struct RestockAlert: Codable, Sendable, Hashable, Identifiable {
    /// The payload version this type writes.
    public static let currentVersion = 1

    /// Payload version; 1.
    public var version: Int
    /// Unique per alert, and the same on every redelivery of it: consumers drop an id they have seen.
    public var id: String
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
    public var message: String
    /// When the alert was raised.
    public var at: Date

    /// Creates an alert.
    public init(
        version: Int = RestockAlert.currentVersion, id: String, store: StoreID, customer: CustomerID, sku: SKU,
        quantity: Int, position: UInt64, message: String, at: Date
    ) {
        self.version = version
        self.id = id
        self.store = store
        self.customer = customer
        self.sku = sku
        self.quantity = quantity
        self.position = position
        self.message = message
        self.at = at
    }

    private enum CodingKeys: String, CodingKey {
        case version, id, store, customer, sku, quantity, position, message, at
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        id = try container.decode(String.self, forKey: .id)
        store = try container.decode(StoreID.self, forKey: .store)
        customer = try container.decode(CustomerID.self, forKey: .customer)
        sku = try container.decode(SKU.self, forKey: .sku)
        quantity = try container.decode(Int.self, forKey: .quantity)
        position = try container.decode(UInt64.self, forKey: .position)
        message = try container.decode(String.self, forKey: .message)
        let text = try container.decode(String.self, forKey: .at)
        guard let date = Timestamp.date(from: text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .at, in: container, debugDescription: "not an RFC 3339 timestamp: \(text)")
        }
        at = date
    }

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

extension RestockAlert {
    /// The alert as compact JSON with sorted keys: the bytes published on the customer's alerts topic.
    public func jsonData() -> Data {
        // Encoding plain strings and integers cannot fail.
        try! PayloadCoding.encoder.encode(self)
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
