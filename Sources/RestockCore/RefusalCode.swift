/// Every code a refused request is answered with, on the customer's or the admin's errors topic: the table of
/// docs/contract.md, "Error codes", and the enum of docs/schemas/error.json (a test holds the three together).
public enum RefusalCode: String, Sendable, Hashable, CaseIterable, Codable {
    /// The payload starts like JSON but is not a JSON object, or a stock change is not a JSON object.
    case invalidJSON = "invalid-json"
    /// The payload is not valid UTF-8.
    case invalidUTF8 = "invalid-utf8"
    /// The payload is over 4096 bytes.
    case payloadTooLarge = "payload-too-large"
    /// A field is missing, of the wrong type or not a whole number, or the fields do not go together.
    case invalidField = "invalid-field"
    /// The SKU is not an identifier.
    case invalidSKU = "invalid-sku"
    /// A customer id is not an identifier (reserved: a request on such a topic is only logged).
    case invalidCustomer = "invalid-customer"
    /// `mode` is neither `once` nor `every`.
    case invalidMode = "invalid-mode"
    /// `minQuantity` is outside 1 … 1,000,000,000.
    case invalidMinQuantity = "invalid-min-quantity"
    /// A `set` or `add` is out of range, or the result of an `add` would be.
    case invalidQuantity = "invalid-quantity"
    /// The request came with the retain flag and was not applied.
    case retainedRequest = "retained-request"
    /// Applying the request made the store fail; it was set aside.
    case requestFailed = "request-failed"
    /// The customer watches as many SKUs as the store allows.
    case tooManyWatches = "too-many-watches"
    /// The customer sent requests faster than the store takes them from one customer.
    case rateLimited = "rate-limited"
    /// The store holds as many watches as it may (its `--max-watches`): a subscribe that would add a watch is refused.
    case storeFull = "store-full"
    /// `expiresAt` is not an RFC 3339 time in UTC, or is not later than the store's clock when the store applies it.
    case invalidExpiresAt = "invalid-expires-at"
}
