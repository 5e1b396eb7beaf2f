import Foundation
import FuzzSupport
import RestockCore
import RestockMQTT

// Fuzz target (a): a request as the store receives it, (topic, payload), taken the way the store service
// takes it (RequestProcessor.apply): the topic is classified with `RestockTopics.request(for:)`, the customer
// level validated, the payload decoded by `RequestDecoder`, and the request applied to a fresh `Store`.
//
// The fuzzer's first byte picks the topic (and customer), the second whether the payload is the rest of the
// bytes as they are or a JSON request assembled from choices whose right answer is known (Oracle.swift).
// Checked for every input, against the intended contract (docs/contract.md, issue 11):
// - nothing traps;
// - a decoded request re-checks: customer as in the topic, a valid SKU, minQuantity 1…1,000,000,000,
//   set 0…1,000,000,000, add within ±1,000,000,000; it re-encodes to JSON that decodes to the same request,
//   and so does the payload the client's request types (SubscribeRequest, …) make of it;
//   the store accepts it;
// - a refusal has a code of the documented set and a detail; a payload over 4 KiB is refused as
//   payload-too-large, and invalid UTF-8 as invalid-utf8;
// - an assembled request is accepted with exactly the values it was built from, or refused with a code
//   that names one of the faults it was built with.

@_cdecl("RequestFuzz_main")
func requestFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzz(data!, size) }
}

/// The contract's limits.
enum Limits {
    static let maximumQuantity = 1_000_000_000
    static let minQuantity = 1...maximumQuantity
    static let set = 0...maximumQuantity
    static let add = -maximumQuantity...maximumQuantity
    static let payloadBytes = 4 * 1024
    /// The codes a refused request may carry.
    static let codes: Set<String> = [
        "invalid-json", "invalid-utf8", "payload-too-large", "invalid-field", "invalid-sku", "invalid-customer",
        "invalid-mode", "invalid-min-quantity", "invalid-quantity", "invalid-expires-at",
    ]
}

let storeID = try! StoreID("apple")
/// With FUZZ_SHOW set, each input's topic and payload are printed before they are decoded: run the target on
/// one crash file that way to see the request that trapped.
let showInputs = getenv("FUZZ_SHOW") != nil
let topics = try! RestockTopics(store: storeID)

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let (topic, expectedKind) = makeTopic(&input)
    let structured = input.byte() & 1 == 1

    // 1. The topic, as the store classifies it.
    let kind = topics.request(for: topic)
    check(kind == expectedKind, "topic \(String(reflecting: topic)) classified as \(String(describing: kind)), expected \(String(describing: expectedKind))")
    guard let kind else { return 0 }

    // 2. The customer level, for customer requests (an invalid one is logged only: there is no one to answer).
    var customer: CustomerID?
    switch kind {
    case .subscribe(let raw), .unsubscribe(let raw):
        let valid = isIdentifier(raw)
        do {
            let id = try CustomerID(raw)
            check(valid && id.rawValue == raw, "customer \(String(reflecting: raw)) accepted as \(id)")
            customer = id
        } catch {
            check(!valid, "customer \(String(reflecting: raw)) refused: \(error)")
            check(error.code == "invalid-customer", "customer \(String(reflecting: raw)) refused with code \(error.code)")
            return 0
        }
    case .stock, .forget, .deadLetter:
        break
    }

    // 3. The payload.
    let payload: [UInt8]
    var oracle: Oracle?
    if structured {
        let assembled = Assembler.assemble(kind: kind, customer: customer, &input)
        payload = assembled.payload
        oracle = assembled.oracle
    } else {
        payload = input.rest()
    }

    if showInputs {
        print("topic \(String(reflecting: topic)) payload \(String(reflecting: String(decoding: payload, as: UTF8.self))) (\(payload.count) bytes)")
    }

    // 4. The decoder.
    let decoded: Result<StoreRequest, RequestRefusal>
    switch kind {
    case .subscribe:
        decoded = Result { () throws(RequestRefusal) in try RequestDecoder.subscribe(customer!, payload: payload) }
    case .unsubscribe:
        decoded = Result { () throws(RequestRefusal) in try RequestDecoder.unsubscribe(customer!, payload: payload) }
    case .stock:
        decoded = Result { () throws(RequestRefusal) in try RequestDecoder.stock(payload: payload) }
    case .forget:
        decoded = Result { () throws(RequestRefusal) in try RequestDecoder.forget(payload: payload) }
    case .deadLetter:
        decoded = Result { () throws(RequestRefusal) in try RequestDecoder.deadLetter(payload: payload) }
    }
    let shown = String(reflecting: String(decoding: payload.prefix(300), as: UTF8.self))

    switch decoded {
    case .failure(let refusal):
        check(Limits.codes.contains(refusal.code.rawValue), "\(shown) on \(topic) refused with undocumented code \(refusal.code.rawValue)")
        check(!refusal.detail.isEmpty, "\(shown) on \(topic) refused with an empty detail")
        if payload.count > Limits.payloadBytes {
            check(refusal.code.rawValue == "payload-too-large", "\(payload.count) bytes refused as \(refusal.code.rawValue)")
        } else if String(validating: payload, as: UTF8.self) == nil {
            check(refusal.code.rawValue == "invalid-utf8", "invalid UTF-8 \(shown) refused as \(refusal.code.rawValue)")
        }
        if let oracle {
            switch oracle {
            case .accept(let request):
                fatalError("\(shown) on \(topic) must decode to \(request), but was refused: \(refusal)")
            case .refuse(let codes):
                check(codes.contains(refusal.code.rawValue), "\(shown) on \(topic) refused as \(refusal), expected one of \(codes.sorted())")
            }
        }
        return 0
    case .success(let request):
        check(payload.count <= Limits.payloadBytes, "a payload of \(payload.count) bytes was accepted")
        check(String(validating: payload, as: UTF8.self) != nil, "invalid UTF-8 \(shown) was accepted")
        recheck(request, kind: kind, customer: customer, payload: shown)
        if let oracle {
            switch oracle {
            case .accept(let expected):
                check(request == expected, "\(shown) on \(topic) decoded to \(request), expected \(expected)")
            case .refuse(let codes):
                fatalError("\(shown) on \(topic) must be refused (\(codes.sorted())), but decoded to \(request)")
            }
        }
        roundTrip(request, kind: kind, customer: customer, payload: shown)
        applyToStore(request, payload: shown)
    }
    return 0
}

/// A decoded request re-checks against the contract.
func recheck(_ request: StoreRequest, kind: RestockTopics.Request, customer: CustomerID?, payload: String) {
    switch request {
    case .subscribe(let who, let sku, _, let minQuantity, let expiresAt):
        check(kind == .subscribe(customer: who.rawValue) && who == customer, "\(payload): subscribe for \(who) on a \(kind) topic")
        check(isIdentifier(sku.rawValue), "\(payload): SKU \(String(reflecting: sku.rawValue)) is not an identifier")
        check(Limits.minQuantity.contains(minQuantity), "\(payload) decoded with minQuantity \(minQuantity), outside 1…1,000,000,000")
        if let expiresAt {
            check(
                (0..<253_402_300_800).contains(expiresAt.timeIntervalSince1970),
                "\(payload) decoded with expiresAt \(expiresAt.timeIntervalSince1970), outside the years 1970…9999")
        }
    case .unsubscribe(let who, let sku):
        check(kind == .unsubscribe(customer: who.rawValue) && who == customer, "\(payload): unsubscribe for \(who) on a \(kind) topic")
        check(isIdentifier(sku.rawValue), "\(payload): SKU \(String(reflecting: sku.rawValue)) is not an identifier")
    case .unsubscribeAll(let who):
        check(kind == .unsubscribe(customer: who.rawValue) && who == customer, "\(payload): unsubscribe-all for \(who) on a \(kind) topic")
    case .deadLetter(let action):
        check(kind == .deadLetter, "\(payload): a dead-letter request on a \(kind) topic")
        check(action.id >= 1, "\(payload): dead letter \(action.id) is not an id")
    case .forget(let who):
        check(kind == .forget, "\(payload): a forget request on a \(kind) topic")
        check(isIdentifier(who.rawValue), "\(payload): customer \(String(reflecting: who.rawValue)) is not an identifier")
    case .stock(let sku, let change):
        check(kind == .stock, "\(payload): a stock change on a \(kind) topic")
        check(isIdentifier(sku.rawValue), "\(payload): SKU \(String(reflecting: sku.rawValue)) is not an identifier")
        switch change {
        case .set(let quantity):
            check(Limits.set.contains(quantity), "\(payload) decoded with set \(quantity), outside 0…1,000,000,000")
        case .add(let delta):
            check(Limits.add.contains(delta), "\(payload) decoded with add \(delta), outside ±1,000,000,000")
        }
    }
}

/// The request written back as the contract's JSON decodes to itself.
func roundTrip(_ request: StoreRequest, kind: RestockTopics.Request, customer: CustomerID?, payload: String) {
    let json: String
    switch request {
    case .subscribe(_, let sku, let mode, let minQuantity, let expiresAt?):
        json = #"{"sku":"\#(sku)","mode":"\#(mode.rawValue)","minQuantity":\#(minQuantity),"expiresAt":"\#(Timestamp.string(from: expiresAt))"}"#
    case .subscribe(_, let sku, let mode, let minQuantity, nil):
        json = #"{"sku":"\#(sku)","mode":"\#(mode.rawValue)","minQuantity":\#(minQuantity)}"#
    case .unsubscribe(_, let sku):
        json = #"{"sku":"\#(sku)"}"#
    case .unsubscribeAll:
        json = #"{"all":true}"#
    case .forget(let who):
        json = #"{"customer":"\#(who)"}"#
    case .deadLetter(.replay(let id)):
        json = #"{"replay":\#(id)}"#
    case .deadLetter(.drop(let id)):
        json = #"{"drop":\#(id)}"#
    case .stock(let sku, .set(let quantity)):
        json = #"{"sku":"\#(sku)","set":\#(quantity)}"#
    case .stock(let sku, .add(let delta)):
        json = #"{"sku":"\#(sku)","add":\#(delta)}"#
    }
    let bytes = Array(json.utf8)
    let again: Result<StoreRequest, RequestRefusal>
    switch kind {
    case .subscribe: again = Result { () throws(RequestRefusal) in try RequestDecoder.subscribe(customer!, payload: bytes) }
    case .unsubscribe: again = Result { () throws(RequestRefusal) in try RequestDecoder.unsubscribe(customer!, payload: bytes) }
    case .stock: again = Result { () throws(RequestRefusal) in try RequestDecoder.stock(payload: bytes) }
    case .forget: again = Result { () throws(RequestRefusal) in try RequestDecoder.forget(payload: bytes) }
    case .deadLetter: again = Result { () throws(RequestRefusal) in try RequestDecoder.deadLetter(payload: bytes) }
    }
    switch again {
    case .success(let decoded):
        check(decoded == request, "\(payload) decoded to \(request); written back as \(json) it decodes to \(decoded)")
    case .failure(let refusal):
        fatalError("\(payload) decoded to \(request); written back as \(json) it is refused: \(refusal)")
    }

    // What the client sends for it (the shared request types) decodes to it too.
    let sent: [UInt8]
    do throws(RequestRefusal) {
        switch request {
        case .subscribe(_, let sku, let mode, let minQuantity, let expiresAt): sent = try SubscribeRequest(sku: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt).payload
        case .unsubscribe(_, let sku): sent = UnsubscribeRequest.sku(sku).payload
        case .unsubscribeAll: sent = UnsubscribeRequest.all.payload
        case .stock(let sku, let change): sent = try StockRequest(sku: sku, change: change).payload
        case .forget(let who): sent = ForgetRequest(customer: who).payload
        case .deadLetter(let action): sent = action.payload
        }
    } catch {
        fatalError("\(payload) decoded to \(request), which the client's request types refuse: \(error)")
    }
    let received: Result<StoreRequest, RequestRefusal>
    switch kind {
    case .subscribe: received = Result { () throws(RequestRefusal) in try RequestDecoder.subscribe(customer!, payload: sent) }
    case .unsubscribe: received = Result { () throws(RequestRefusal) in try RequestDecoder.unsubscribe(customer!, payload: sent) }
    case .stock: received = Result { () throws(RequestRefusal) in try RequestDecoder.stock(payload: sent) }
    case .forget: received = Result { () throws(RequestRefusal) in try RequestDecoder.forget(payload: sent) }
    case .deadLetter: received = Result { () throws(RequestRefusal) in try RequestDecoder.deadLetter(payload: sent) }
    }
    check(
        (try? received.get()) == request,
        "\(payload) decoded to \(request); the client sends it as \(String(decoding: sent, as: UTF8.self)), which decodes to \(received)")
}

/// The store takes every request the decoder lets through (here a fresh store: nothing on hand, no watches).
func applyToStore(_ request: StoreRequest, payload: String) {
    let store = try! Store(id: storeID, clock: { Date(timeIntervalSince1970: 1_800_000_000) })
    do throws(RestockError) {
        switch request {
        case .subscribe(let who, let sku, let mode, let minQuantity, let expiresAt):
            let outcome = try store.subscribe(who, to: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt)
            check(outcome.isNew && outcome.isKept && outcome.alert == nil, "\(payload): a first watch on an empty store gave \(outcome)")
            check(store.watch(who, of: sku)?.minQuantity == minQuantity, "\(payload): the store keeps \(String(describing: store.watch(who, of: sku)))")
        case .unsubscribe(let who, let sku):
            check(store.unsubscribe(who, from: sku) == nil, "\(payload): an empty store had a watch")
        case .unsubscribeAll(let who), .forget(let who):
            check(store.unsubscribeAll(who).isEmpty, "\(payload): an empty store had watches")
        case .deadLetter:
            break  // the store's database holds the dead letters, not the Store
        case .stock(let sku, let change):
            let outcome = try store.changeStock(of: sku, change)
            let expected: Int
            switch change {
            case .set(let quantity): expected = quantity
            case .add(let delta): expected = max(0, delta)
            }
            check(outcome.quantity == expected && store.quantity(of: sku) == expected, "\(payload): the store has \(outcome.quantity), expected \(expected)")
        }
    } catch {
        fatalError("\(payload): the decoder accepted \(request), but the store refuses it: \(error)")
    }
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, written out.
func isIdentifier(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard (1...64).contains(bytes.count) else { return false }
    for (index, byte) in bytes.enumerated() {
        let alphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        let punctuation = byte == 0x2E || byte == 0x5F || byte == 0x2D
        if !(alphanumeric || (index > 0 && punctuation)) { return false }
    }
    return true
}

/// Customer levels: valid ones, the longest valid, and invalid ones.
let customerLevels = [
    "alice", "bob-1", "C.d_e", String(repeating: "k", count: 64), String(repeating: "k", count: 65), "", "-x", ".x", "al ice",
    "é", "+", "#", "al\u{0}ice", "al/ice", "x\n",
]

/// A topic the store may receive, and how it must be classified.
func makeTopic(_ input: inout FuzzInput) -> (String, RestockTopics.Request?) {
    let selector = input.byte()
    let customer = input.pick(customerLevels)
    let levelOK = !customer.contains("/")
    switch selector % 8 {
    case 0, 1:
        return ("restock/apple/subscribe/\(customer)", levelOK ? .subscribe(customer: customer) : nil)
    case 2, 3:
        return ("restock/apple/unsubscribe/\(customer)", levelOK ? .unsubscribe(customer: customer) : nil)
    case 4, 5:
        return ("restock/apple/admin/stock", .stock)
    case 6 where selector & 8 != 0:
        return ("restock/apple/admin/forget", .forget)
    case 7 where selector & 8 != 0:
        return ("restock/apple/admin/dead-letter", .deadLetter)
    default:
        let odd: [(String, RestockTopics.Request?)] = [
            ("restock/apple/subscribe/alice/extra", nil), ("restock/apple/subscribe", nil), ("restock/pear/admin/stock", nil),
            ("restock/apple/admin/stock/", nil), ("restock/apple/admin/stocks", nil), ("restock/apple/subscribe/", .subscribe(customer: "")),
            ("restock/apple//subscribe/alice", nil), ("restock/applesauce/subscribe/alice", nil), ("restock/apple", nil),
            ("Restock/apple/subscribe/alice", nil), ("restock/apple/customers/alice/alerts", nil), ("", nil),
            ("restock/apple/admin/forgotten", nil), ("restock/apple/admin/forget/alice", nil), ("restock/apple/admin/Forget", nil),
            ("restock/apple/admin/dead-letters", nil), ("restock/apple/admin/report", nil), ("restock/apple/admin/dead-letter/1", nil),
        ]
        return input.pick(odd)
    }
}
