import Mosquitto
import RestockCore

/// The topics of one store (DESIGN §3): `P/{store}/…`, where `P` is the prefix (`restock` by default).
public struct RestockTopics: Sendable, Hashable {
    /// The default topic prefix.
    public static let defaultPrefix = "restock"

    /// The prefix `P`.
    public let prefix: String
    /// The store.
    public let store: StoreID
    /// `P/{store}`.
    public let root: String

    /// - Throws: ``RestockMQTTError/invalidPrefix(_:reason:)`` when the prefix is not a valid topic
    ///   without wildcards, or has an empty level.
    public init(prefix: String = RestockTopics.defaultPrefix, store: StoreID) throws(RestockMQTTError) {
        do {
            _ = try MQTTTopic(prefix)
        } catch {
            throw .invalidPrefix(prefix, reason: error.description)
        }
        guard !prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty),
            !prefix.hasPrefix("$")
        else { throw .invalidPrefix(prefix, reason: "levels must not be empty, and it must not start with $") }
        self.prefix = prefix
        self.store = store
        self.root = "\(prefix)/\(store)"
    }

    /// `P/{store}/subscribe/{customer}`: a customer's subscribe requests.
    public func subscribe(_ customer: CustomerID) -> String { "\(root)/subscribe/\(customer)" }
    /// `P/{store}/unsubscribe/{customer}`: a customer's unsubscribe requests.
    public func unsubscribe(_ customer: CustomerID) -> String { "\(root)/unsubscribe/\(customer)" }
    /// `P/{store}/admin/stock`: stock changes.
    public var adminStock: String { "\(root)/admin/stock" }
    /// `P/{store}/admin/errors`: refused admin requests.
    public var adminErrors: String { "\(root)/admin/errors" }
    /// `P/{store}/customers/{customer}/alerts`.
    public func alerts(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/alerts" }
    /// `P/{store}/customers/{customer}/subscriptions`: the retained mirror of a customer's watches.
    public func subscriptions(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/subscriptions" }
    /// `P/{store}/customers/{customer}/errors`: refused requests of a customer.
    public func errors(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/errors" }
    /// `P/{store}/inventory/{sku}`: retained on-hand quantity.
    public func inventory(_ sku: SKU) -> String { "\(root)/inventory/\(sku)" }
    /// `P/{store}/inventory/+`.
    public var inventoryFilter: String { "\(root)/inventory/+" }
    /// `P/{store}/status`: retained online/offline.
    public var status: String { "\(root)/status" }
    /// `P/{store}/claim`: retained; the instance that last claimed the store at start (one store per id).
    public var claim: String { "\(root)/claim" }

    /// The filters the store subscribes to for requests.
    public var requestFilters: [String] { ["\(root)/subscribe/+", "\(root)/unsubscribe/+", adminStock] }

    /// What a request topic asks for, with the customer level as sent (not yet validated).
    public enum Request: Sendable, Hashable {
        case subscribe(customer: String)
        case unsubscribe(customer: String)
        case stock
    }

    /// Classifies a topic the store received; `nil` for anything that is not one of its request topics.
    public func request(for topic: String) -> Request? {
        guard topic.hasPrefix(root + "/") else { return nil }
        let rest = topic.dropFirst(root.count + 1)
        if rest == "admin/stock" { return .stock }
        let levels = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2 else { return nil }
        switch levels[0] {
        case "subscribe": return .subscribe(customer: String(levels[1]))
        case "unsubscribe": return .unsubscribe(customer: String(levels[1]))
        default: return nil
        }
    }
}
