import Foundation
import RestockCore
import SeededRandom
import Testing

@testable import RestockPipeline

/// The journal witness a store reads from the broker before it opens its storage (docs/contract.md, "Journal witness"):
/// bytes anyone with write access to the topic could have retained. Held against a plain reference model: the payload
/// is a witness exactly when it is a JSON object of at most 1 KiB whose `store` is this store's id and whose `through`
/// is a whole number from 0 to Int64's maximum; anything else is refused with one sentence, and nothing traps.
@Suite("Journal witness payloads")
struct JournalWitnessPayloadTests {
    static let apple = try! StoreID("apple")

    /// The reference: what `payload` must read as (`.some(nil)`: cleared, `nil`: refused), by Foundation's
    /// `JSONSerialization`; `unknown` for a number written with a fraction or exponent beyond 2^53, where a double
    /// cannot say which whole number it is.
    enum Expected: Equatable {
        case read(Int64??)
        case unknown
    }

    static func expected(_ payload: [UInt8]) -> Expected {
        if payload.isEmpty { return .read(.some(nil)) }
        guard payload.count <= 1_024, let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            object["store"] as? String == "apple", let number = object["through"] as? NSNumber, !(object["through"] is Bool)
        else { return .read(nil) }
        // A whole number written as one (`601`): its digits; written with a fraction or an exponent (`601.0`, `6.01e2`):
        // the double, whole or not.
        if String(cString: number.objCType) == "d" {
            let value = number.doubleValue
            guard value == value.rounded(), value >= 0 else { return .read(nil) }
            return value < 9_007_199_254_740_992 ? .read(.some(Int64(value))) : .unknown
        }
        guard let value = Int64(number.stringValue), value >= 0 else { return .read(nil) }
        return .read(.some(value))
    }

    static func read(_ payload: [UInt8]) -> Int64?? {
        do {
            return .some(try JournalWitnessPayload.read(payload, of: apple)?.through)
        } catch {
            #expect(!error.description.isEmpty && !error.description.contains("\n"))
            return nil
        }
    }

    @Test("what the store publishes reads back; odd payloads are refused in one sentence", arguments: [
        (#"{"store":"apple","through":601}"#, Int64?.some(601)),
        (#"{"through":0,"store":"apple","extra":true}"#, 0),
        (#"{"store":"pear","through":601}"#, nil),
        (#"{"store":"apple","through":-1}"#, nil),
        (#"{"store":"apple","through":1.5}"#, nil),
        (#"{"store":"apple","through":1e300}"#, nil),
        (#"{"store":"apple","through":"601"}"#, nil),
        (#"{"store":"apple","through":601,"through":1}"#, nil),
        (#"{"store":"apple","through":601,}"#, nil),
        (#"{"store":"apple","through":6.01e2}"#, 601),
        (#"{"store":"apple","through":99999999999999999999999}"#, nil),
        (#"{"store":"apple"}"#, nil),
        (#"[601]"#, nil),
        ("601", nil),
        ("\u{FF}\u{FE}", nil),
    ])
    func examples(payload: String, through: Int64?) {
        let read = Self.read(Array(payload.utf8))
        #expect(read == (through.map { .some($0) } ?? nil), "\(payload)")
        #expect(Self.read(JournalWitnessPayload(store: Self.apple, through: 42).payloadBytes()) == .some(42))
        #expect(Self.read([]) == .some(nil), "an empty retained message clears it")
    }

    @Test("random payloads, and valid witnesses mutated byte by byte, read as the reference model says, and never trap")
    func randomPayloads() {
        var random = SplitMix64(seed: 34)
        let alphabet = Array(#"{}[]":,0123456789-+.eE applestorethroughpear\ "#.utf8) + [0, 0xFF, 0xC3]
        for round in 0..<20_000 {
            var payload: [UInt8]
            if round % 2 == 0 {
                payload = JournalWitnessPayload(store: Self.apple, through: Int64(random.next() % 1_000_000)).payloadBytes()
                for _ in 0..<(1 + Int(random.next() % 3)) where !payload.isEmpty {
                    let at = Int(random.next() % UInt64(payload.count))
                    switch random.next() % 3 {
                    case 0: payload[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                    case 1: payload.remove(at: at)
                    default: payload.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                    }
                }
            } else {
                payload = (0..<Int(random.next() % 40)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            }
            let read = Self.read(payload)
            guard case .read(let expected) = Self.expected(payload) else { continue }
            #expect(read == expected, "\(String(decoding: payload, as: UTF8.self))")
            if read != expected { return }
        }
    }
}
