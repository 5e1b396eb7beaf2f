import Foundation
import Mosquitto
import RestockCore
import RestockMQTT
import RestockTestSupport
import SeededRandom

/// A seeded stream of requests, most of them hostile, and what a store must make of them.
///
/// The expectation comes from a reference: the same requests decoded with ``RequestDecoder`` and applied in
/// order to an in-process ``Store`` (whose semantics `make fuzz` checks against a plain model). What S4 tests is
/// everything in between: MQTT, the journal, retained and QoS handling, SQLite, restarts.
struct HostileStream {
    /// One request as published.
    struct Request {
        var topic: String
        var payload: [UInt8]
        var qos: MQTTQoS = .atLeastOnce
        var retain = false
    }

    private(set) var requests: [Request] = []
    /// The store the requests should leave behind.
    let reference: Store
    /// The ids of the alerts the reference raised.
    private(set) var alertIDs: Set<String> = []
    /// How many QoS 1 requests must be answered on an errors topic.
    private(set) var refusals = 0
    /// How many QoS 0 and 2 requests (all refused by their payload) may be answered: QoS 0 is at most once.
    private(set) var unorderedRefusals = 0
    /// How many requests the store must drop unanswered (no valid customer id, or not one of its topics).
    private(set) var unanswerable = 0

    static let customers = (0..<30).map { "c\($0)" }
    static let skus = (0..<8).map { "s\($0)" }

    init(count: Int, seed: UInt64) throws {
        reference = try Store(id: StoreID("apple"))
        var random = SplitMix64(seed: seed)
        let topics = try RestockTopics(store: StoreID("apple"))
        for _ in 0..<count {
            let request = Self.generate(&random)
            requests.append(request)
            expect(request, topics: topics)
        }
    }

    /// Applies `request` to the reference, as the store's processor does, and counts what it must answer.
    private mutating func expect(_ request: Request, topics: RestockTopics) {
        guard let kind = topics.request(for: request.topic) else {
            unanswerable += 1
            return
        }
        var customer: CustomerID?
        if case .subscribe(let raw) = kind { customer = try? CustomerID(raw) }
        if case .unsubscribe(let raw) = kind { customer = try? CustomerID(raw) }
        if kind != .stock, customer == nil {
            unanswerable += 1
            return
        }
        let refused: Bool
        if request.retain {
            refused = true
        } else {
            do throws(RequestRefusal) {
                let decoded: StoreRequest
                switch kind {
                case .subscribe: decoded = try RequestDecoder.subscribe(customer!, payload: request.payload)
                case .unsubscribe: decoded = try RequestDecoder.unsubscribe(customer!, payload: request.payload)
                case .stock: decoded = try RequestDecoder.stock(payload: request.payload)
                case .forget: decoded = try RequestDecoder.forget(payload: request.payload)
                case .deadLetter: decoded = try RequestDecoder.deadLetter(payload: request.payload)
                }
                refused = !apply(decoded)
            } catch {
                refused = true
            }
        }
        if request.qos == .atLeastOnce {
            if refused { refusals += 1 }
        } else {
            precondition(refused, "QoS 0 and 2 requests of the stream are refused by their payload alone")
            unorderedRefusals += 1
        }
    }

    /// Applies a decoded request; `false` when the store refuses it.
    private mutating func apply(_ request: StoreRequest) -> Bool {
        do {
            switch request {
            case .subscribe(let who, let sku, let mode, let minQuantity, let expiresAt):
                if let alert = try reference.subscribe(who, to: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt).alert { alertIDs.insert(alert.id) }
            case .unsubscribe(let who, let sku): reference.unsubscribe(who, from: sku)
            case .unsubscribeAll(let who): reference.unsubscribeAll(who)
            case .stock(let sku, let change):
                for alert in try reference.changeStock(of: sku, change).alerts { alertIDs.insert(alert.id) }
            case .forget(let who): reference.unsubscribeAll(who)
            case .deadLetter: break  // the stream sends none
            }
            return true
        } catch {
            return false
        }
    }

    // MARK: Generation

    static let boundaryNumbers = [
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "2147483647", "-2147483648",
        "2147483648", "1000000000", "1000000001", "999999999", "-1000000000", "-1000000001", "0", "-0", "1e19", "-1e19", "1e300",
        "1.5", "-1", "1", "2", "3e0", "4.0",
    ]

    static func generate(_ random: inout SplitMix64) -> Request {
        let customer = customers.randomElement(using: &random)!
        let sku = skus.randomElement(using: &random)!
        let subscribe = "restock/apple/subscribe/\(customer)", unsubscribe = "restock/apple/unsubscribe/\(customer)"
        let stock = "restock/apple/admin/stock"
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<25: return Request(topic: subscribe, payload: validSubscribe(sku, &random))
        case 25..<33: return Request(topic: unsubscribe, payload: validUnsubscribe(sku, &random))
        case 33..<48: return Request(topic: stock, payload: validStock(sku, &random))
        case 48..<70:
            // A valid payload with a few bytes flipped, inserted, deleted, or cut short.
            let (topic, payload) =
                switch Int.random(in: 0..<3, using: &random) {
                case 0: (subscribe, validSubscribe(sku, &random))
                case 1: (unsubscribe, validUnsubscribe(sku, &random))
                default: (stock, validStock(sku, &random))
                }
            return Request(topic: topic, payload: mutate(payload, &random))
        case 70..<82:
            let number = boundaryNumbers.randomElement(using: &random)!
            switch Int.random(in: 0..<3, using: &random) {
            case 0: return Request(topic: subscribe, payload: Array(#"{"sku":"\#(sku)","minQuantity":\#(number)}"#.utf8))
            case 1: return Request(topic: stock, payload: Array(#"{"sku":"\#(sku)","set":\#(number)}"#.utf8))
            default: return Request(topic: stock, payload: Array(#"{"sku":"\#(sku)","add":\#(number)}"#.utf8))
            }
        case 82..<90: return Request(topic: [subscribe, unsubscribe, stock].randomElement(using: &random)!, payload: oddJSON(sku, &random))
        case 90..<93:
            // A valid request, published retained.
            return Request(topic: subscribe, payload: validSubscribe(sku, &random), retain: true)
        case 93..<97:
            // Refused by its payload alone, at QoS 0 or 2 (which may overtake QoS 1 requests, so nothing that changes state).
            let payload = Array(#"{"sku":"\#(sku)","minQuantity":-\#(Int.random(in: 1...9, using: &random))}"#.utf8)
            return Request(topic: subscribe, payload: payload, qos: Bool.random(using: &random) ? .atMostOnce : .exactlyOnce)
        case 97: return Request(topic: subscribe, payload: Array(repeating: UInt8(ascii: "a"), count: Int.random(in: 4_097...6_000, using: &random)))
        default:
            // Topics that are not the store's, or carry no valid customer id.
            let topic = [
                "restock/apple/subscribe/\(customer)/extra", "restock/apple/subscribe/-\(customer)", "restock/apple/admin/stock/x",
                "restock/apple/unsubscribe/\(customer)/", "restock/apple/subscribe/\(String(repeating: "x", count: 65))",
            ].randomElement(using: &random)!
            return Request(topic: topic, payload: Array(sku.utf8))
        }
    }

    static func validSubscribe(_ sku: String, _ random: inout SplitMix64) -> [UInt8] {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return Array(sku.utf8)
        case 1: return Array(#"{"sku":"\#(sku)"}"#.utf8)
        default:
            let mode = Bool.random(using: &random) ? "once" : "every"
            let minQuantity = [1, 1, 2, 3, 5, 1_000_000_000].randomElement(using: &random)!
            return Array(#"{"sku":"\#(sku)","mode":"\#(mode)","minQuantity":\#(minQuantity)}"#.utf8)
        }
    }

    static func validUnsubscribe(_ sku: String, _ random: inout SplitMix64) -> [UInt8] {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return Array(sku.utf8)
        case 1: return Array(#"{"all":true}"#.utf8)
        default: return Array(#"{"sku":"\#(sku)"}"#.utf8)
        }
    }

    static func validStock(_ sku: String, _ random: inout SplitMix64) -> [UInt8] {
        if Bool.random(using: &random) {
            let quantity = [0, 0, 1, 2, 3, 5, 1_000_000_000].randomElement(using: &random)!
            return Array(#"{"sku":"\#(sku)","set":\#(quantity)}"#.utf8)
        }
        let delta = [-3, -1, 1, 2, 4, 1_000_000_000, -1_000_000_000].randomElement(using: &random)!
        return Array(#"{"sku":"\#(sku)","add":\#(delta)}"#.utf8)
    }

    static func mutate(_ payload: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = payload
        for _ in 0..<Int.random(in: 1...3, using: &random) where !bytes.isEmpty {
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(Array(#"{}[]",:-0e9\"#.utf8).randomElement(using: &random)!, at: at)
            case 2: bytes.remove(at: at)
            default: bytes.removeSubrange(at...)
            }
        }
        return bytes
    }

    static func oddJSON(_ sku: String, _ random: inout SplitMix64) -> [UInt8] {
        let depth = Int.random(in: 100...1_500, using: &random)
        let forms: [[UInt8]] = [
            Array(#"{"sku":"\#(sku)","sku":"s0"}"#.utf8),  // duplicate keys
            Array(#"{"sku":"\#(sku)","set":1,}"#.utf8),  // trailing comma
            Array(#"{"sku":"\#(sku)","add":1,"add":2}"#.utf8),
            [0xEF, 0xBB, 0xBF] + Array(#"{"sku":"\#(sku)","set":1}"#.utf8),  // byte order mark
            Array(#"{"sku":"\#(sku)","x":\#(String(repeating: "[", count: depth))\#(String(repeating: "]", count: depth))}"#.utf8),
            Array(String(repeating: "{\"a\":", count: depth / 2).utf8),
            Array(#"{"sku":"\#(sku)","set":1}"#.utf8) + [0],  // trailing NUL
            Array(#"{"sku":"\#(sku)","minQuantity":1e-400}"#.utf8),
            Array(#"{"sku":"\#(sku)\u0000x"}"#.utf8),
            Array(#"{"sku":"\ud800"}"#.utf8),
            Array("null".utf8), Array("{}".utf8), Array(#"{"all":true,"all":false}"#.utf8), [],
        ]
        return forms.randomElement(using: &random)!
    }
}
