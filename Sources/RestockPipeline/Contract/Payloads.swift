import Foundation
import RestockCore

/// `P/{store}/customers/{customer}/subscriptions`, retained: the mirror of a customer's watch list.
public struct SubscriptionsMirror: Codable, Sendable, Hashable {
    /// One watch as the mirror shows it.
    public struct Entry: Codable, Sendable, Hashable {
        /// The SKU watched.
        public var sku: String
        /// `once` or `every`, as requested.
        public var mode: WatchMode
        /// The on-hand quantity at which the watch is satisfied.
        public var minQuantity: Int
        /// The watch's place in signup order.
        public var position: UInt64
        /// When the watch was first created (RFC 3339).
        public var since: String
        /// When the watch ends unalerted (RFC 3339); absent for a watch that never expires.
        public var expiresAt: String?
    }

    /// The store.
    public var store: String
    /// The customer.
    public var customer: String
    /// The customer's watches in position order; empty when none.
    public var watching: [Entry]
    /// When the store published this mirror (RFC 3339).
    public var updatedAt: String

    /// The mirror of `watches`.
    public init(store: StoreID, customer: CustomerID, watches: [Watch], updatedAt: Date) {
        self.store = store.rawValue
        self.customer = customer.rawValue
        self.watching = watches.map {
            Entry(
                sku: $0.sku.rawValue, mode: $0.mode, minQuantity: $0.minQuantity, position: $0.position,
                since: Timestamp.string(from: $0.since), expiresAt: $0.expiresAt.map(Timestamp.string(from:)))
        }
        self.updatedAt = Timestamp.string(from: updatedAt)
    }
}

/// `P/{store}/inventory/{sku}`, retained.
public struct InventoryRecord: Codable, Sendable, Hashable {
    /// The store.
    public var store: String
    /// The SKU.
    public var sku: String
    /// On hand after the last applied stock change.
    public var quantity: Int
    /// When the store published it (RFC 3339).
    public var updatedAt: String

    /// The record of `sku` at `quantity`, published at `updatedAt`.
    public init(store: StoreID, sku: SKU, quantity: Int, updatedAt: Date) {
        self.store = store.rawValue
        self.sku = sku.rawValue
        self.quantity = quantity
        self.updatedAt = Timestamp.string(from: updatedAt)
    }

    /// Its payload, byte for byte what ``PayloadCoding/encoder`` writes: written directly when no string needs
    /// escaping (a store's own record: identifiers and a timestamp), which is every stock change's; the encoder's way
    /// otherwise. A JSONEncoder took a quarter of the time a stock change was applied in (docs/benchmarks.md, B4).
    package func payloadBytes() -> [UInt8] {
        guard [store, sku, updatedAt].allSatisfy(Self.needsNoEscaping) else { return (self as any Encodable).payloadBytes() }
        var json = #"{"quantity":"#
        json += String(quantity)
        json += #","sku":""#
        json += sku
        json += #"","store":""#
        json += store
        json += #"","updatedAt":""#
        json += updatedAt
        json += #""}"#
        return Array(json.utf8)
    }

    /// Whether `text` is written as it is between quotes: printable ASCII but a quote or a backslash (the encoder escapes
    /// those and control characters; with ``PayloadCoding/encoder``'s style, never a slash).
    static func needsNoEscaping(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}

/// `P/{store}/status`, retained, and the store's will.
public struct StoreStatus: Codable, Sendable, Hashable {
    /// Why a store is offline.
    public enum OfflineReason: String, Codable, Sendable, Hashable {
        /// It stopped cleanly (SIGINT, SIGTERM) and said so itself.
        case stopped
        /// Its connection was lost: the broker published the store's will.
        case connectionLost = "connection-lost"
    }

    /// Whether the store says it is online.
    public enum State: String, Codable, Sendable, Hashable {
        /// The store owns its id and runs (see ``StoreStatus/paused``).
        case online
        /// The store stopped, or its connection was lost.
        case offline
    }

    /// The store.
    public var store: String
    /// Online or offline.
    public var state: State
    /// `online`: when the store (re)connected; `offline` after a clean stop: when it stopped. Absent in the will,
    /// which is written when the store connects and cannot know when the connection will be lost.
    public var since: String?
    /// Offline only: why.
    public var reason: OfflineReason?
    /// The store process that wrote it: one live instance per store id.
    public var instance: String?
    /// While online, refreshed every ``StoreStatus/heartbeatInterval``. Another process judges the store live by
    /// seeing this value change, timed by its own clock (docs/contract.md, "One store per store id"), never by
    /// comparing it with its own time.
    public var heartbeatAt: String?
    /// Online only, while the store takes no requests for now (its disk is full): why, in one sentence. Requests
    /// sent meanwhile wait in the store's session on the broker and are applied when it resumes.
    public var paused: String?

    /// How often a live store refreshes its status.
    public static let heartbeatInterval = Duration.seconds(2)
    /// How long a heartbeat may go unchanged, by the reader's own clock, before its store counts as gone.
    public static let staleAfter = 6.0

    /// An online status; `paused` says why the store takes no requests for now, if it does not.
    public static func online(store: StoreID, since: Date, instance: String, heartbeatAt: Date, paused: String? = nil) -> StoreStatus {
        StoreStatus(store: store, state: .online, since: since, reason: nil, instance: instance, heartbeatAt: heartbeatAt, paused: paused)
    }

    /// The offline status of a clean stop at `time`.
    public static func stopped(store: StoreID, at time: Date, instance: String) -> StoreStatus {
        StoreStatus(store: store, state: .offline, since: time, reason: .stopped, instance: instance, heartbeatAt: nil, paused: nil)
    }

    /// The offline status the broker publishes as the store's will: no `since`, as nobody knows it in advance.
    public static func connectionLost(store: StoreID, instance: String) -> StoreStatus {
        StoreStatus(store: store, state: .offline, since: nil, reason: .connectionLost, instance: instance, heartbeatAt: nil, paused: nil)
    }

    private init(
        store: StoreID, state: State, since: Date?, reason: OfflineReason?, instance: String, heartbeatAt: Date?, paused: String?
    ) {
        self.store = store.rawValue
        self.state = state
        self.since = since.map(Timestamp.string(from:))
        self.reason = reason
        self.instance = instance
        self.heartbeatAt = heartbeatAt.map(Timestamp.string(from:))
        self.paused = paused
    }

    /// Whether the store says it is online.
    public var isOnline: Bool { state == .online }

    /// Whether, read against the reader's clock `now`, the heartbeat is at most ``staleAfter`` seconds away: a hint
    /// only, right when both clocks agree. A reader that must be sure watches the heartbeat change instead
    /// (``StoreLiveness``).
    public func isLive(at now: Date) -> Bool {
        guard isOnline, let text = heartbeatAt, let beat = Timestamp.date(from: text) else { return false }
        return abs(now.timeIntervalSince(beat)) <= Self.staleAfter
    }
}

/// The answer to a refused request, on the customer's or the admin's errors topic.
public struct ErrorReport: Codable, Sendable, Hashable {
    /// The refusal code (``RefusalCode``'s raw value; a consumer treats a code it does not know as a refusal).
    public var error: String
    /// One sentence naming the problem and the limit.
    public var detail: String
    /// The topic the refused request was published on.
    public var topic: String
    /// When the store refused it (RFC 3339).
    public var at: String

    /// The report of `refusal` of a request on `topic`.
    public init(refusal: RequestRefusal, topic: String, at: Date) {
        self.error = refusal.code.rawValue
        self.detail = refusal.detail
        self.topic = topic
        self.at = Timestamp.string(from: at)
    }
}

/// How far a store's journal goes (docs/contract.md, "Journal witness"), published retained on `P/{store}/journal` by
/// a store whose state is in PostgreSQL: the broker keeps it when the database's servers change, so that a store or
/// standby that starts while only a former primary answers (started again on its own after a replica was promoted, and
/// lacking what the store committed since) refuses that server instead of losing those requests.
public struct JournalWitnessPayload: Codable, Sendable, Hashable {
    /// The store whose journal it is.
    public var store: String
    /// The place of the last request the store journaled (the journal's places rise by one per request).
    public var through: Int64

    /// The witness of `store`'s journal through `through`.
    public init(store: StoreID, through: Int64) {
        self.store = store.rawValue
        self.through = through
    }

    /// The witness a retained message of `store` holds: `nil` for an empty payload (cleared: no witness). Read as
    /// strictly as a request (``StrictJSON``: no name twice, no trailing comma); `through` a whole number from 0.
    /// - Throws: ``JournalWitnessPayload/Invalid`` with one sentence when it is not one, or another store's.
    package static func read(_ payload: [UInt8], of store: StoreID) throws(Invalid) -> JournalWitnessPayload? {
        guard !payload.isEmpty else { return nil }
        let shape = "is not a journal witness ({\"store\":…,\"through\":…} of at most 1 KiB)"
        guard payload.count <= 1_024, let members = try? StrictJSON.members(in: payload) else { throw Invalid(reason: shape) }
        let named = Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        guard case .string(let named)? = named["store"] else { throw Invalid(reason: shape) }
        guard named == store.rawValue else { throw Invalid(reason: "names store \"\(named.prefix(64))\", not \"\(store)\"") }
        guard case .number(let number)? = members.first(where: { $0.name == "through" })?.value else { throw Invalid(reason: shape) }
        guard case .integer(let through) = number.value, through >= 0 else {
            throw Invalid(reason: "names no place a journal can have (\(number)): a whole number from 0 to \(Int64.max)")
        }
        return JournalWitnessPayload(store: store, through: Int64(through))
    }

    /// A retained message on the journal topic that is not a witness of the store's.
    package struct Invalid: Error, CustomStringConvertible {
        /// What is wrong with it.
        package let reason: String
        package var description: String { "the retained journal witness \(reason)" }
    }
}

/// A store instance's claim on its store id, published retained on `P/{store}/claim` when it starts, before it
/// takes the store's session: of instances starting at the same moment, the last to claim goes on.
public struct StoreClaim: Codable, Sendable, Hashable {
    /// The store id claimed.
    public var store: String
    /// The store process that claims it.
    public var instance: String
    /// When it claimed it.
    public var at: String

    /// How often a starting store publishes its claim again, until it is online: a reader judges a claim fresh by
    /// seeing it change.
    public static let renewInterval = Duration.seconds(1)

    /// `instance`'s claim on `store`, made at `at`.
    public init(store: StoreID, instance: String, at: Date) {
        self.store = store.rawValue
        self.instance = instance
        self.at = Timestamp.string(from: at)
    }

    /// Whether, read against the reader's clock `now`, it was made at most ``StoreStatus/staleAfter`` seconds away:
    /// a hint only (a starting store publishes its claim again every second, which a reader can watch change).
    public func isFresh(at now: Date) -> Bool {
        guard let made = Timestamp.date(from: at) else { return false }
        return abs(now.timeIntervalSince(made)) <= StoreStatus.staleAfter
    }
}

extension Encodable {
    /// Compact JSON with sorted keys, the encoding of every payload.
    package func payloadBytes() -> [UInt8] {
        // These payloads hold only strings and integers, which always encode: the empty result is never taken.
        (try? PayloadCoding.encoder.encode(self)).map(Array.init) ?? []
    }
}
