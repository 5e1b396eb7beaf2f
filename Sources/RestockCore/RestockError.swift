/// Why the store refused a request. Every case leaves the store unchanged.
public enum RestockError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An identifier does not match `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    case invalidIdentifier(kind: String, value: String)
    /// A watch's minimum quantity is outside ``RequestLimits/minQuantity`` (the value as given).
    case invalidMinQuantity(String)
    /// A stock `set` or `add` is outside ``RequestLimits/stockSet`` or ``RequestLimits/stockAdd``.
    case stockChangeOutOfRange(field: String, value: String)
    /// A quantity would leave the range the store accepts (0 through ``Store/maximumQuantity``).
    case quantityOutOfRange(sku: String, requested: String)
    /// The fair-release factor is negative or too large.
    case invalidAlertsPerUnit(Int)
    /// The per-customer watch limit is outside ``Store/maximumWatchesPerCustomerRange``.
    case invalidMaximumWatchesPerCustomer(Int)
    /// A subscribe would give `customer` a new watch while they already have `watching` watches, at least the
    /// store's ``Store/maximumWatchesPerCustomer`` (`limit`). More than the limit only after a restore: the
    /// watches of a snapshot are all kept.
    case tooManyWatches(customer: CustomerID, watching: Int, limit: Int)
    /// A subscribe would add a watch to a store that holds `watches` watches, at least its ``Store/maximumWatches``
    /// (`limit`). More than the limit only after a restore, or a lowered limit.
    case storeFull(watches: Int, limit: Int)
    /// A subscribe would give a new watch a position, and the store has given out the last one a watch may take
    /// (``StoreSnapshot/maximumCounter``): only a store restored from a file that holds a watch at that position, since a
    /// store gives out one position per new watch. Answered with the code of ``storeFull(watches:limit:)``.
    case noPositionLeft
    /// The store-wide watch limit is outside ``Store/maximumWatchesRange``.
    case invalidMaximumWatches(Int)

    /// The code a request refused with this error is answered with; `nil` for an error no request causes (a store
    /// id, a store option).
    public var refusalCode: RefusalCode? {
        switch self {
        case .invalidIdentifier(let kind, _):
            switch kind {
            case SKUKind.name: .invalidSKU
            case CustomerKind.name: .invalidCustomer
            default: nil
            }
        case .invalidMinQuantity: .invalidMinQuantity
        case .stockChangeOutOfRange, .quantityOutOfRange: .invalidQuantity
        case .tooManyWatches: .tooManyWatches
        case .storeFull, .noPositionLeft: .storeFull
        case .invalidAlertsPerUnit, .invalidMaximumWatchesPerCustomer, .invalidMaximumWatches: nil
        }
    }

    /// A short, stable, machine-readable code: the ``refusalCode`` of an error a request causes, or one naming the
    /// option or identifier otherwise.
    public var code: String {
        if let refusalCode { return refusalCode.rawValue }
        switch self {
        case .invalidIdentifier(let kind, _): return kind == StoreKind.name ? "invalid-store" : "invalid-identifier"
        case .invalidAlertsPerUnit: return "invalid-alerts-per-unit"
        case .invalidMaximumWatchesPerCustomer: return "invalid-maximum-watches-per-customer"
        case .invalidMaximumWatches: return "invalid-maximum-watches"
        default: return "invalid-request"
        }
    }

    /// One human sentence that names the problem.
    public var description: String {
        switch self {
        case .invalidIdentifier(let kind, let value):
            "invalid \(kind) \(Self.quoted(value)): use 1 to 64 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit"
        case .invalidMinQuantity(let value):
            "invalid minQuantity \(value): it must be an integer from \(RequestLimits.describe(RequestLimits.minQuantity))"
        case .stockChangeOutOfRange(let field, let value):
            "invalid \(field) \(value): it must be an integer from \(RequestLimits.describe(field == "add" ? RequestLimits.stockAdd : RequestLimits.stockSet))"
        case .quantityOutOfRange(let sku, let requested):
            "stock of \(sku) cannot become \(requested): it must stay between 0 and \(Store.maximumQuantity)"
        case .invalidAlertsPerUnit(let value):
            "invalid alertsPerUnit \(value): use 0 (off) through \(Store.maximumAlertsPerUnit)"
        case .invalidMaximumWatchesPerCustomer(let value):
            "invalid maximumWatchesPerCustomer \(value): use \(Store.maximumWatchesPerCustomerRange.lowerBound) through \(Store.maximumWatchesPerCustomerRange.upperBound)"
        case .invalidMaximumWatches(let value):
            "invalid maximumWatches \(value): use \(Store.maximumWatchesRange.lowerBound) through \(Store.maximumWatchesRange.upperBound), or none"
        case .storeFull(let watches, let limit):
            "the store holds \(watches) watches, the most it may hold (\(limit)): no new watch is taken until others end; watches already held may still change their terms or be unsubscribed"
        case .noPositionLeft:
            "the store has given out the last position a watch may take (\(StoreSnapshot.maximumCounter)): no new watch is taken; watches already held may still change their terms or be unsubscribed"
        case .tooManyWatches(let customer, let watching, let limit) where watching > limit:
            // Only a restored store (older data, or a lowered limit) has a customer over the limit.
            "\(customer) already watches \(watching) SKUs, more than the \(limit) one customer may watch: unsubscribe from \(watching - limit + 1) first"
        case .tooManyWatches(let customer, let watching, _):
            "\(customer) already watches \(watching) \(watching == 1 ? "SKU" : "SKUs"), the most one customer may watch: unsubscribe from one first"
        }
    }

    /// Quotes a value for a message, escaping control characters and cutting it short.
    private static func quoted(_ value: String) -> String {
        let shown = value.count > 80 ? String(value.prefix(80)) + "…" : value
        return String(reflecting: shown)
    }
}
