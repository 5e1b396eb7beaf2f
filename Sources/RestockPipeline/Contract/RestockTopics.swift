import RestockCore

/// The topics of one store (docs/contract.md, "Topics"): `P/{store}/…`, where `P` is the prefix (`restock` by default).
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
        if let reason = Self.problem(inPrefix: prefix) { throw .invalidPrefix(prefix, reason: reason) }
        guard !prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty),
            !prefix.hasPrefix("$")
        else { throw .invalidPrefix(prefix, reason: "levels must not be empty, and it must not start with $") }
        self.prefix = prefix
        self.store = store
        self.root = "\(prefix)/\(store)"
    }

    /// Why `prefix` cannot begin the store's topics, if it cannot: it must be a topic name MQTT allows to publish
    /// on (1 to 65,535 bytes of UTF-8 without the wildcards `+` and `#`), of printable characters only, without `:` (it
    /// also names the sessions' client ids, ``SessionClientIDs``).
    static func problem(inPrefix prefix: String) -> String? {
        let bytes = prefix.utf8.count
        if bytes == 0 { return "it is empty" }
        if bytes > 65_535 - 100 { return "it is \(bytes) bytes long; the store's topics must stay within MQTT's 65,535" }
        if prefix.contains(where: { $0 == "+" || $0 == "#" }) { return "it contains a wildcard (+ or #)" }
        if prefix.contains(":") { return "it contains ':', which separates the parts of the client ids made from it" }
        if prefix.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.value == 0 }) {
            return "it contains a control character"
        }
        return nil
    }

    /// `P/{store}/subscribe/{customer}`: a customer's subscribe requests.
    public func subscribe(_ customer: CustomerID) -> String { "\(root)/subscribe/\(customer)" }
    /// `P/{store}/unsubscribe/{customer}`: a customer's unsubscribe requests.
    public func unsubscribe(_ customer: CustomerID) -> String { "\(root)/unsubscribe/\(customer)" }
    /// `P/{store}/admin/stock`: stock changes.
    public var adminStock: String { "\(root)/admin/stock" }
    /// `P/{store}/admin/forget`: requests to forget a customer (admin).
    public var adminForget: String { "\(root)/admin/forget" }
    /// `P/{store}/admin/forgotten`: the store's answer to each forget request.
    public var adminForgotten: String { "\(root)/admin/forgotten" }
    /// `P/{store}/admin/report`: requests for the store's report (admin), taken by the publishing connection.
    public var adminReport: String { "\(root)/admin/report" }
    /// `P/{store}/admin/dead-letters`: requests for the list of dead letters (admin), taken by the publishing connection.
    public var adminDeadLetters: String { "\(root)/admin/dead-letters" }
    /// `P/{store}/admin/dead-letter`: replay or drop one dead letter (admin), taken by the store's session as requests.
    public var adminDeadLetter: String { "\(root)/admin/dead-letter" }
    /// `P/{store}/admin/replies`: the replies to report and dead-letter requests that name no MQTT 5 response topic; a
    /// response topic must be one level under it (`P/{store}/admin/replies/r1`).
    public var adminReplies: String { "\(root)/admin/replies" }
    /// `P/{store}/admin/errors`: refused admin requests.
    public var adminErrors: String { "\(root)/admin/errors" }
    /// `P/{store}/customers/{customer}/alerts`.
    public func alerts(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/alerts" }
    /// `P/{store}/customers/{customer}/subscriptions`: the retained mirror of a customer's watches.
    public func subscriptions(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/subscriptions" }
    /// `P/{store}/customers/{customer}/errors`: refused requests of a customer.
    public func errors(_ customer: CustomerID) -> String { "\(root)/customers/\(customer)/errors" }
    /// `P/{store}/probe`: nothing is published or subscribed there; the store's session unsubscribes from it after the
    /// acknowledgements of each batch of requests, and the broker's answer confirms it took them (docs/contract.md,
    /// "One store per store id").
    public var deliveryProbe: String { "\(root)/probe" }
    /// `P/{store}/inventory/{sku}`: retained on-hand quantity.
    public func inventory(_ sku: SKU) -> String { "\(root)/inventory/\(sku)" }
    /// `P/{store}/inventory/+`.
    public var inventoryFilter: String { "\(root)/inventory/+" }
    /// `P/{store}/status`: retained online/offline.
    public var status: String { "\(root)/status" }
    /// `P/{store}/claim`: retained; the instance that last claimed the store at start (one store per id).
    public var claim: String { "\(root)/claim" }
    /// `P/{store}/journal`: retained; how far the store's journal goes, as a store whose state is in PostgreSQL last
    /// published it (``JournalWitnessPayload``): a database server that holds less is not used.
    public var journalWitness: String { "\(root)/journal" }

    /// The filters the store subscribes to for requests.
    public var requestFilters: [String] { ["\(root)/subscribe/+", "\(root)/unsubscribe/+", adminStock, adminForget, adminDeadLetter] }

    /// What a request topic asks for, with the customer level as sent (not yet validated).
    public enum Request: Sendable, Hashable {
        case subscribe(customer: String)
        case unsubscribe(customer: String)
        case stock
        case forget
        case deadLetter
    }

    /// Classifies a topic the store received; `nil` for anything that is not one of its request topics.
    public func request(for topic: String) -> Request? {
        guard topic.hasPrefix(root + "/") else { return nil }
        let rest = topic.dropFirst(root.count + 1)
        if rest == "admin/stock" { return .stock }
        if rest == "admin/forget" { return .forget }
        if rest == "admin/dead-letter" { return .deadLetter }
        let levels = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2 else { return nil }
        switch levels[0] {
        case "subscribe": return .subscribe(customer: String(levels[1]))
        case "unsubscribe": return .unsubscribe(customer: String(levels[1]))
        default: return nil
        }
    }
}
