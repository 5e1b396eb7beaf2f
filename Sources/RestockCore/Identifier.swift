/// What kind of thing an ``Identifier`` names; used in messages and to keep the kinds apart in the type system.
public protocol IdentifierKind: Sendable {
    /// The kind in words, as it appears in error messages ("customer id", "SKU").
    static var name: String { get }
}

/// A validated identifier of a store, a customer or a SKU.
///
/// Every identifier matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$` (docs/contract.md, "Topics"), so it can never inject a
/// topic level (`/`), a wildcard (`+`, `#`), a NUL or anything outside ASCII into an MQTT topic.
/// The check runs once, in the initializer; a value of this type is valid by construction.
public struct Identifier<Kind: IdentifierKind>: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest identifier accepted, in characters.
    public static var maximumLength: Int { 64 }

    /// The identifier as text.
    public let rawValue: String

    /// Validates `rawValue` and wraps it.
    /// - Throws: ``RestockError/invalidIdentifier(kind:value:)`` when it does not match the pattern.
    public init(_ rawValue: String) throws(RestockError) {
        guard Self.isValid(rawValue) else {
            throw .invalidIdentifier(kind: Kind.name, value: rawValue)
        }
        self.rawValue = rawValue
    }

    /// Whether `candidate` matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    public static func isValid(_ candidate: String) -> Bool {
        let bytes = candidate.utf8
        guard let first = bytes.first, bytes.count <= maximumLength, first.isASCIIAlphanumeric else {
            return false
        }
        return bytes.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// The identifier as written.
    public var description: String { rawValue }

    /// Identifiers sort by their text.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension Identifier: Codable {
    /// Decodes the text, refusing one that is not a valid identifier.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}

/// The kind of a store's identifier.
public enum StoreKind: IdentifierKind { public static var name: String { "store id" } }
/// The kind of a customer's identifier.
public enum CustomerKind: IdentifierKind { public static var name: String { "customer id" } }
/// The kind of a product's identifier.
public enum SKUKind: IdentifierKind { public static var name: String { "SKU" } }

/// Names a store; it is the `{store}` level of every topic.
public typealias StoreID = Identifier<StoreKind>
/// Names a customer, the observer; it is the `{customer}` level of a customer's topics.
public typealias CustomerID = Identifier<CustomerKind>
/// Names a product (stock keeping unit).
public typealias SKU = Identifier<SKUKind>
