import Foundation
import RestockCore
import RestockPipeline
import SeededRandom
import Testing

@Suite("Request payloads and topics (no broker)")
struct RequestDecoderTests {
    let alice = customer("alice")

    @Test("subscribe: a bare SKU, or JSON with defaults once and 1; unknown fields ignored")
    func subscribe() throws {
        #expect(try RequestDecoder.subscribe(alice, payload: Array("iphone-15".utf8)) == .subscribe(alice, sku("iphone-15"), mode: .once, minQuantity: 1))
        #expect(try RequestDecoder.subscribe(alice, payload: Array(" iphone-15\n".utf8)) == .subscribe(alice, sku("iphone-15"), mode: .once, minQuantity: 1))
        let full = Array(#"{"sku":"ipad","mode":"every","minQuantity":3,"note":"x"}"#.utf8)
        #expect(try RequestDecoder.subscribe(alice, payload: full) == .subscribe(alice, sku("ipad"), mode: .every, minQuantity: 3))
        // JSON null in an optional field means "not given": the default.
        let nulls = Array(#"{"sku":"ipad","mode":null,"minQuantity":null}"#.utf8)
        #expect(try RequestDecoder.subscribe(alice, payload: nulls) == .subscribe(alice, sku("ipad"), mode: .once, minQuantity: 1))
    }

    @Test(
        "subscribe refusals carry the right code",
        arguments: [
            (#"{"sku":1}"#, "invalid-field"), (#"{"mode":"once"}"#, "invalid-field"), (#"{"sku":"a","minQuantity":1.5}"#, "invalid-field"),
            (#"{"sku":"a","minQuantity":true}"#, "invalid-field"), (#"{"sku":null}"#, "invalid-field"),
            (#"{"sku":"a""#, "invalid-json"), (#"["a"]"#, "invalid-json"), ("a b", "invalid-sku"), ("", "invalid-sku"),
            (#"{"sku":"a","mode":"ONCE"}"#, "invalid-mode"), (#"{"sku":"a","minQuantity":-4}"#, "invalid-min-quantity"),
        ])
    func subscribeRefusals(payload: String, code: String) {
        #expect(throws: RequestRefusal.self) { try RequestDecoder.subscribe(alice, payload: Array(payload.utf8)) }
        do { _ = try RequestDecoder.subscribe(alice, payload: Array(payload.utf8)) } catch { #expect(error.code.rawValue == code, "\(payload)") }
    }

    @Test(
        "numbers at the edges are refused with the field's code and range, never trapping",
        arguments: [
            (#"{"sku":"a","minQuantity":-9223372036854775808}"#, "invalid-min-quantity"),
            (#"{"sku":"a","minQuantity":9223372036854775807}"#, "invalid-min-quantity"),
            (#"{"sku":"a","minQuantity":1000000001}"#, "invalid-min-quantity"),
            (#"{"sku":"a","minQuantity":1e19}"#, "invalid-min-quantity"),
            (#"{"sku":"a","minQuantity":-1e300}"#, "invalid-min-quantity"),
            (#"{"sku":"a","minQuantity":0}"#, "invalid-min-quantity"),
        ])
    func subscribeBoundaries(payload: String, code: String) {
        do {
            _ = try RequestDecoder.subscribe(alice, payload: Array(payload.utf8))
            Issue.record("accepted \(payload)")
        } catch {
            #expect(error.code.rawValue == code, "\(payload)")
            #expect(error.detail.contains("1 to 1000000000"), "\(error.detail)")
        }
    }

    @Test(
        "stock numbers at the edges are refused as invalid-quantity with the range",
        arguments: [
            #"{"sku":"a","set":-9223372036854775808}"#, #"{"sku":"a","add":-9223372036854775808}"#,
            #"{"sku":"a","add":9223372036854775807}"#, #"{"sku":"a","add":-999999999999999999}"#, #"{"sku":"a","set":1000000001}"#,
            #"{"sku":"a","add":-1000000001}"#, #"{"sku":"a","set":1e19}"#,
        ])
    func stockBoundaries(payload: String) {
        do {
            _ = try RequestDecoder.stock(payload: Array(payload.utf8))
            Issue.record("accepted \(payload)")
        } catch {
            #expect(error.code.rawValue == "invalid-quantity", "\(payload)")
            #expect(error.detail.contains("1000000000"), "\(error.detail)")
        }
    }

    @Test("the limits themselves, and whole numbers written as 3.0, 3e0 or -0, are accepted")
    func limitsAccepted() throws {
        #expect(try RequestDecoder.subscribe(alice, payload: Array(#"{"sku":"a","minQuantity":1000000000}"#.utf8)) == .subscribe(alice, sku("a"), mode: .once, minQuantity: 1_000_000_000))
        #expect(try RequestDecoder.subscribe(alice, payload: Array(#"{"sku":"a","minQuantity":3.0}"#.utf8)) == .subscribe(alice, sku("a"), mode: .once, minQuantity: 3))
        #expect(try RequestDecoder.stock(payload: Array(#"{"sku":"a","add":-1000000000}"#.utf8)) == .stock(sku("a"), .add(-1_000_000_000)))
        #expect(try RequestDecoder.stock(payload: Array(#"{"sku":"a","set":-0}"#.utf8)) == .stock(sku("a"), .set(0)))
        #expect(try RequestDecoder.stock(payload: Array(#"{"sku":"a","set":2e0}"#.utf8)) == .stock(sku("a"), .set(2)))
    }

    @Test(
        "a field of the wrong type, or a required field missing, is invalid-field naming the field (details as before)",
        arguments: [
            ("subscribe", #"{"sku":1}"#, #""sku" must be a string"#), ("subscribe", #"{"sku":null}"#, #""sku" must be a string"#),
            ("subscribe", #"{"mode":"once"}"#, #"the request needs "sku""#), ("subscribe", #"{"sku":"a","mode":5}"#, #""mode" must be a string"#),
            ("subscribe", #"{"sku":"a","minQuantity":"2"}"#, #""minQuantity" must be an integer"#),
            ("subscribe", #"{"sku":"a","minQuantity":[1]}"#, #""minQuantity" must be an integer"#),
            ("subscribe", #"{"sku":"a","minQuantity":{}}"#, #""minQuantity" must be an integer"#),
            ("subscribe", #"{"sku":"a","minQuantity":false}"#, #""minQuantity" must be an integer"#),
            ("stock", #"{"sku":"a","set":"5"}"#, #""set" must be an integer"#), ("stock", #"{"set":1}"#, #"the request needs "sku""#),
            ("stock", #"{"sku":["a"],"set":1}"#, #""sku" must be a string"#), ("stock", #"{"sku":"a","add":null}"#, #"a stock request needs exactly one of "set" and "add""#),
            ("unsubscribe", #"{"all":"yes"}"#, #""all" must be true or false"#), ("unsubscribe", #"{"sku":true}"#, #""sku" must be a string"#),
            ("unsubscribe", #"{"all":false}"#, #"an unsubscribe request needs "sku" or "all":true"#),
        ])
    func wrongTypes(kind: String, payload: String, detail: String) throws {
        let bytes = Array(payload.utf8)
        let result = Result { () throws(RequestRefusal) in
            switch kind {
            case "subscribe": try RequestDecoder.subscribe(alice, payload: bytes)
            case "unsubscribe": try RequestDecoder.unsubscribe(alice, payload: bytes)
            default: try RequestDecoder.stock(payload: bytes)
            }
        }
        guard case .failure(let refusal) = result else { Issue.record("\(payload) accepted: \(result)"); return }
        #expect(refusal.code.rawValue == "invalid-field", "\(payload): \(refusal)")
        #expect(refusal.detail == detail, "\(payload)")
    }

    @Test("a byte order mark before the payload is ignored, once, before or after the leading whitespace")
    func byteOrderMark() throws {
        let mark = "\u{FEFF}"
        #expect(Array(mark.utf8) == [0xEF, 0xBB, 0xBF])
        let ipad = StoreRequest.subscribe(alice, sku("ipad"), mode: .once, minQuantity: 1)
        for payload in [mark + #"{"sku":"ipad"}"#, mark + "ipad", " \n" + mark + #" {"sku":"ipad"}"#, mark + " ipad\n", "\t" + mark + "ipad"] {
            #expect(try RequestDecoder.subscribe(alice, payload: Array(payload.utf8)) == ipad, "\(payload.debugDescription)")
        }
        #expect(
            try RequestDecoder.subscribe(alice, payload: Array((mark + #"{"sku":"ipad","minQuantity":2}"#).utf8))
                == .subscribe(alice, sku("ipad"), mode: .once, minQuantity: 2))
        #expect(try RequestDecoder.unsubscribe(alice, payload: Array((mark + #"{"all":true}"#).utf8)) == .unsubscribeAll(alice))
        #expect(try RequestDecoder.unsubscribe(alice, payload: Array((mark + "ipad").utf8)) == .unsubscribe(alice, sku("ipad")))
        #expect(try RequestDecoder.stock(payload: Array((mark + #"{"sku":"a","set":3}"#).utf8)) == .stock(sku("a"), .set(3)))
        // Only one, and only at the start: a second mark is part of a bare SKU; one after the object is more after it.
        for (payload, code) in [
            (mark + mark + #"{"sku":"ipad"}"#, "invalid-sku"), (mark + mark + "ipad", "invalid-sku"), (mark, "invalid-sku"),
            (#"{"sku":"ipad"}"# + mark, "invalid-json"), ("ip" + mark + "ad", "invalid-sku"), (mark + #"["ipad"]"#, "invalid-json"),
        ] {
            do {
                _ = try RequestDecoder.subscribe(alice, payload: Array(payload.utf8))
                Issue.record("\(payload.debugDescription) accepted")
            } catch {
                #expect(error.code.rawValue == code, "\(payload.debugDescription): \(error)")
            }
        }
    }

    @Test("payload-too-large names the real size")
    func tooLargeNamesTheSize() {
        #expect(RequestDecoder.tooLarge(70_000).detail.contains("70000 bytes"))
        do { _ = try RequestDecoder.stock(payload: Array(repeating: 0x61, count: 9_000)) } catch { #expect(error.detail.contains("9000 bytes")) }
    }

    @Test("size and UTF-8 are checked first")
    func rawChecks() {
        do { _ = try RequestDecoder.subscribe(alice, payload: Array(repeating: 0x61, count: 4_097)) } catch { #expect(error.code.rawValue == "payload-too-large") }
        do { _ = try RequestDecoder.subscribe(alice, payload: [0xC3, 0x28]) } catch { #expect(error.code.rawValue == "invalid-utf8") }
        #expect((try? RequestDecoder.subscribe(alice, payload: Array(repeating: 0x61, count: 64))) != nil)
    }

    @Test("unsubscribe: a bare SKU, {\"sku\"} or {\"all\":true}")
    func unsubscribe() throws {
        #expect(try RequestDecoder.unsubscribe(alice, payload: Array("ipad".utf8)) == .unsubscribe(alice, sku("ipad")))
        #expect(try RequestDecoder.unsubscribe(alice, payload: Array(#"{"sku":"ipad"}"#.utf8)) == .unsubscribe(alice, sku("ipad")))
        #expect(try RequestDecoder.unsubscribe(alice, payload: Array(#"{"all":true}"#.utf8)) == .unsubscribeAll(alice))
        #expect(throws: RequestRefusal.self) { try RequestDecoder.unsubscribe(alice, payload: Array(#"{"all":false}"#.utf8)) }
        #expect(throws: RequestRefusal.self) { try RequestDecoder.unsubscribe(alice, payload: Array(#"{"all":true,"sku":"x"}"#.utf8)) }
    }

    @Test("stock: exactly one of set (≥ 0) and add (any sign)")
    func stock() throws {
        #expect(try RequestDecoder.stock(payload: Array(#"{"sku":"a","set":0}"#.utf8)) == .stock(sku("a"), .set(0)))
        #expect(try RequestDecoder.stock(payload: Array(#"{"sku":"a","add":-3}"#.utf8)) == .stock(sku("a"), .add(-3)))
        for bad in [#"{"sku":"a"}"#, #"{"sku":"a","set":1,"add":1}"#, #"{"sku":"a","set":-1}"#, #"{"set":1}"#, "a"] {
            #expect(throws: RequestRefusal.self, "\(bad)") { try RequestDecoder.stock(payload: Array(bad.utf8)) }
        }
    }

    @Test("topics: the names of the contract's topic table, and classification of request topics")
    func topics() throws {
        let topics = try RestockTopics(prefix: "shop/eu", store: apple)
        #expect(topics.subscribe(alice) == "shop/eu/apple/subscribe/alice")
        #expect(topics.alerts(alice) == "shop/eu/apple/customers/alice/alerts")
        #expect(topics.subscriptions(alice) == "shop/eu/apple/customers/alice/subscriptions")
        #expect(topics.errors(alice) == "shop/eu/apple/customers/alice/errors")
        #expect(topics.inventory(sku("x")) == "shop/eu/apple/inventory/x")
        #expect(topics.status == "shop/eu/apple/status" && topics.adminStock == "shop/eu/apple/admin/stock")
        #expect(topics.request(for: "shop/eu/apple/subscribe/bob") == .subscribe(customer: "bob"))
        #expect(topics.request(for: "shop/eu/apple/unsubscribe/bob") == .unsubscribe(customer: "bob"))
        #expect(topics.request(for: "shop/eu/apple/admin/stock") == .stock)
        #expect(topics.request(for: "shop/eu/apple/subscribe/bob/extra") == nil)
        #expect(topics.request(for: "shop/eu/other/subscribe/bob") == nil)
        for prefix in ["", "a/+", "a//b", "#", "$SYS"] {
            #expect(throws: RestockMQTTError.self, "\(prefix)") { try RestockTopics(prefix: prefix, store: apple) }
        }
    }

    @Test("a payload that begins and ends with printable ASCII is left untrimmed: Foundation's trimming would not change it either (20,000 random payloads)")
    func printableEndsNeedNoTrimming() {
        // White space of every kind Foundation trims, a byte order mark, and the payloads' own characters.
        let alphabet: [Character] = Array(#"{}"[]:,ab09 -_."#) + ["\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2003}", "\u{2028}", "\u{3000}", "\u{FEFF}", "é"]
        var random = SplitMix64(seed: 35)
        var untrimmed = 0
        for _ in 0..<20_000 {
            let text = String((0..<Int.random(in: 1...8, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let bytes = Array(text.utf8)
            let printable = { (byte: UInt8) in byte > 0x20 && byte < 0x7F }
            guard printable(bytes[0]), printable(bytes[bytes.count - 1]) else { continue }
            untrimmed += 1
            #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == text, "\(text.debugDescription)")
        }
        #expect(untrimmed > 1_000)
    }
}
