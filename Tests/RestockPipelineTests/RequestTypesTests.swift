import Foundation
import RestockCore
import RestockPipeline
import SeededRandom
import Testing

/// One definition per request: what the client encodes is exactly what the store decodes, for any valid
/// request, and the limits are the core's.
@Suite("Request types: one definition for the client and the store")
struct RequestTypesTests {
    static let characters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

    /// A random valid identifier: 1 to 64 characters, starting with a letter or digit.
    static func identifier(_ random: inout SplitMix64) -> SKU {
        let length = Int.random(in: 1...64, using: &random)
        let first = characters[Int.random(in: 0..<62, using: &random)]
        let rest = (1..<length).map { _ in characters[Int.random(in: 0..<characters.count, using: &random)] }
        return try! SKU(String([first] + rest))
    }

    /// A number of `range`, often at its edges.
    static func number(in range: ClosedRange<Int>, _ random: inout SplitMix64) -> Int {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: range.lowerBound
        case 1: range.upperBound
        default: Int.random(in: range, using: &random)
        }
    }

    @Test("20,000 random valid requests: decode(encode(r)) == r", arguments: [UInt64(1), 2, 3, 4])
    func roundTrip(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<5_000 {
            let sku = Self.identifier(&random)
            let subscribe = try SubscribeRequest(
                sku: sku, mode: Bool.random(using: &random) ? .every : .once,
                minQuantity: Self.number(in: RequestLimits.minQuantity, &random))
            #expect(try SubscribeRequest(payload: subscribe.payload) == subscribe)
            let unsubscribe: UnsubscribeRequest = Bool.random(using: &random) ? .all : .sku(sku)
            #expect(try UnsubscribeRequest(payload: unsubscribe.payload) == unsubscribe)
            let change: StockChange =
                Bool.random(using: &random)
                ? .set(Self.number(in: RequestLimits.stockSet, &random)) : .add(Self.number(in: RequestLimits.stockAdd, &random))
            let stock = try StockRequest(sku: sku, change: change)
            #expect(try StockRequest(payload: stock.payload) == stock)
        }
    }

    @Test("the payloads are compact JSON with sorted keys and the defaults left out")
    func payloadText() throws {
        let ipad = try SKU("ipad")
        #expect(String(decoding: try SubscribeRequest(sku: ipad).payload, as: UTF8.self) == #"{"sku":"ipad"}"#)
        #expect(
            String(decoding: try SubscribeRequest(sku: ipad, mode: .every, minQuantity: 2).payload, as: UTF8.self)
                == #"{"minQuantity":2,"mode":"every","sku":"ipad"}"#)
        #expect(String(decoding: UnsubscribeRequest.all.payload, as: UTF8.self) == #"{"all":true}"#)
        #expect(String(decoding: try StockRequest(sku: ipad, change: .add(-2)).payload, as: UTF8.self) == #"{"add":-2,"sku":"ipad"}"#)
    }

    @Test("a request outside the limits is refused where it is made, with the store's own refusal")
    func limits() throws {
        let ipad = try SKU("ipad")
        let store = try Store(id: try StoreID("apple"))
        for minQuantity in [0, -1, 1_000_000_001, Int.min, Int.max] {
            do {
                _ = try SubscribeRequest(sku: ipad, minQuantity: minQuantity)
                Issue.record("minQuantity \(minQuantity) was accepted")
            } catch {
                #expect(error.code.rawValue == "invalid-min-quantity", "\(error)")
            }
            // The core refuses the same numbers with the same code.
            do {
                try store.subscribe(try CustomerID("c"), to: ipad, minQuantity: minQuantity)
                Issue.record("the store took minQuantity \(minQuantity)")
            } catch {
                #expect(error.refusalCode == .invalidMinQuantity)
            }
        }
        for change: StockChange in [.set(-1), .set(1_000_000_001), .add(1_000_000_001), .add(Int.min)] {
            do {
                _ = try StockRequest(sku: ipad, change: change)
                Issue.record("\(change) was accepted")
            } catch {
                #expect(error.code.rawValue == "invalid-quantity", "\(error)")
            }
        }
    }
}
