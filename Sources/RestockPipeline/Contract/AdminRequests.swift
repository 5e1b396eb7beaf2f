import Foundation
import RestockCore

/// A request to forget a customer: what `P/{store}/admin/forget` carries, `{"customer":"alice"}` (docs/contract.md,
/// "Forget a customer").
public struct ForgetRequest: Sendable, Hashable {
    /// The customer to forget.
    public let customer: CustomerID

    /// A request to forget `customer`.
    public init(customer: CustomerID) { self.customer = customer }

    /// Decodes a payload: a JSON object `{"customer":"…"}`.
    /// - Throws: `invalid-json` for anything but a JSON object, `invalid-field` without a string `customer`,
    ///   `invalid-customer` when it is not an identifier.
    public init(payload: [UInt8]) throws(RequestRefusal) {
        let shape = #"a forget request is a JSON object: {"customer":"…"}"#
        guard case .object(let object) = try RequestDecoder.parse(payload, notAnObject: shape) else {
            throw RequestRefusal(code: .invalidJSON, detail: shape)
        }
        let text = try object.requiredString("customer")
        do {
            customer = try CustomerID(text)
        } catch {
            throw RequestRefusal(error)
        }
    }

    /// The JSON payload: `{"customer":"alice"}`.
    public var payload: [UInt8] { Body(customer: customer.rawValue).payloadBytes() }

    private struct Body: Encodable {
        var customer: String
    }
}

/// The store's answer to a forget request, on `P/{store}/admin/forgotten`, once nothing about the customer is left in
/// its data directory but what the next checkpoint removes.
public struct ForgottenReport: Codable, Sendable, Hashable {
    /// The store.
    public var store: String
    /// The customer forgotten.
    public var customer: String
    /// How many watches the customer had.
    public var watches: Int
    /// When the store forgot them (RFC 3339).
    public var at: String

    /// A report of `customer` forgotten, with `watches` watches, at `at`.
    public init(store: StoreID, customer: CustomerID, watches: Int, at: Date) {
        self.store = store.rawValue
        self.customer = customer.rawValue
        self.watches = watches
        self.at = Timestamp.string(from: at)
    }
}
