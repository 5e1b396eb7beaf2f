import Foundation
import RestockCore
import RestockPipeline
import SeededRandom
import Testing

/// Request objects are strict JSON (RFC 8259): what Foundation lets through beyond it — a trailing comma, a name
/// twice in one object — is refused as invalid-json, and so is nesting past 32 levels.
@Suite("Strict JSON in requests (no broker)")
struct StrictJSONTests {
    let alice = try! CustomerID("alice")

    func refusal(_ payload: String) -> RequestRefusal? {
        do {
            _ = try RequestDecoder.subscribe(alice, payload: Array(payload.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test(
        "refused as invalid-json, naming what is wrong",
        arguments: [
            (#"{"sku":"ipad",}"#, "a trailing comma"),
            (#"{"sku":"ipad","x":[1,2,]}"#, "a trailing comma"),
            (#"{"sku":"ipad","sku":"mac"}"#, #"the name "sku" appears twice"#),
            (#"{"sku":"ipad","x":{"a":1,"a":2}}"#, #"the name "a" appears twice"#),
            // One name in two spellings (found by the outside trial: an escape hid the second "sku").
            (#"{"sku":"dupe","set":5,"s\u006bu":"other"}"#, #"the name "sku" appears twice"#),
            (#"{"sku":"dupe","set":5,"\u0073et":7}"#, #"the name "set" appears twice"#),
            (#"{"sku":"ipad"} {"sku":"mac"}"#, "more after the JSON value"),
            (#"{"sku":'ipad'}"#, "a value belongs here"),
            (#"{sku:"ipad"}"#, "a name in double quotes"),
            (#"{"sku":"ipad" "mode":"every"}"#, "a comma or the end"),
            (#"{"sku":"ip\qad"}"#, "an unknown escape"),
            (#"{"sku":"ipad","minQuantity":01}"#, "a comma or the end"),
            (#"{"sku":"ipad","minQuantity":1.}"#, "a digit belongs after a decimal point"),
            (#"{"sku":"ipad","x":NaN}"#, "a value belongs here"),
            (#"{"sku":"ipad","x":tru}"#, "a value belongs here"),
            (#"{"sku":"ipad""#, "ends inside an object"),
            // A lone half of a surrogate pair has no meaning of its own (RFC 8259, section 8.2), in a value or a name.
            (#"{"sku":"ipad","x":"\ud800"}"#, "half a surrogate pair"),
            (#"{"sku":"ipad","x":"\udc00\ud800"}"#, "half a surrogate pair"),
            (#"{"sku":"ipad","x":"\uD83D\u0041"}"#, "half a surrogate pair"),
            (#"{"sku":"ipad","x":"\ud83d"}"#, "half a surrogate pair"),
            (#"{"sku":"\udfff"}"#, "half a surrogate pair"),
            (#"{"sku":"ipad","x":{"\ud800":1}}"#, "half a surrogate pair"),
            (#"{"sku":"ipad","x":"\u12"}"#, "four hex digits"),
            (#"{"sku":"ipad","x":"\u12G4"}"#, "four hex digits"),
        ])
    func refused(payload: String, reason: String) throws {
        let refused = try #require(refusal(payload), "\(payload) was accepted")
        #expect(refused.code.rawValue == "invalid-json")
        #expect(refused.detail.contains(reason), "\(payload): \(refused.detail)")
    }

    @Test("escapes are resolved in names and in values: one name in two spellings is given twice, a pair is one character")
    func escapes() throws {
        let pair = #"{"sku":"ipad","😀":1,"\ud83d\ude00":2}"#
        #expect(refusal(pair)?.detail.contains(#"the name "😀" appears twice"#) == true, "\(String(describing: refusal(pair)))")
        let accented = #"{"sku":"ipad","\u00e9":1,"é":2}"#
        #expect(refusal(accented)?.detail.contains(#"the name "é" appears twice"#) == true)
        let spelled = #"{"s\u006bu":"ip\u0061d","m\u006fde":"ev\u0065ry","minQ\u0075antity":2,"x":"\uD83D\uDE00\n\"\\\/"}"#
        #expect(try RequestDecoder.subscribe(alice, payload: Array(spelled.utf8)) == .subscribe(alice, try SKU("ipad"), mode: .every, minQuantity: 2))
        // A resolved SKU is checked as it reads: the refusal shows it resolved.
        let slash = try #require(refusal(#"{"sku":"x\u002Fy\ud83d\ude00\t"}"#))
        #expect(slash.code.rawValue == "invalid-sku" && slash.detail.contains(#""x/y😀\t""#), "\(slash)")
    }

    @Test("nesting: 32 levels are a request with an unknown field, 33 are refused")
    func depth() throws {
        let nested = { (levels: Int) in #"{"sku":"ipad","x":"# + String(repeating: "[", count: levels - 1) + String(repeating: "]", count: levels - 1) + "}" }
        #expect(refusal(nested(32)) == nil)
        #expect(refusal(nested(33))?.detail.contains("nest more than 32 deep") == true)
        #expect(refusal(nested(2_000))?.code.rawValue == "invalid-json")  // one pass, no recursion: no stack to run out of
    }

    @Test("valid JSON is accepted as before: escapes, numbers, nested unknown fields, whitespace, empty containers")
    func accepted() throws {
        for payload in [
            #"{"sku":"ipad"}"#, #" { "sku" : "ipad" , "mode" : "every" } "#, #"{"sku":"ip\u0061d","x":"\"\\\/\b\f\n\r\t"}"#,
            #"{"sku":"ipad","minQuantity":3e0}"#, #"{"sku":"ipad","minQuantity":-0,"x":-1.5E+3}"#,
            #"{"sku":"ipad","x":{"y":[1,{"z":null}],"w":[],"v":{}},"t":true,"f":false}"#,
        ] {
            let refused = refusal(payload)
            #expect(refused == nil || refused?.code.rawValue != "invalid-json", "\(payload): \(String(describing: refused))")
        }
    }

    @Test("against Foundation on 20,000 generated documents: strict never accepts what Foundation cannot parse")
    func agreesWithFoundation() throws {
        var random = SplitMix64(seed: 16)
        let pieces = [#"{"#, #"}"#, #"["#, #"]"#, #","#, #":"#, #""a""#, #""b""#, "1", "-0.5e3", "true", "null", " ", #""\u00e9""#]
        for _ in 0..<20_000 {
            let body = (0..<Int.random(in: 1...12, using: &random)).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &random)] }.joined()
            let payload = "{" + body
            let strictAccepts = refusal(payload)?.code.rawValue != "invalid-json"
            if strictAccepts {
                #expect((try? JSONSerialization.jsonObject(with: Data(payload.utf8))) != nil, "strict accepted \(payload)")
            }
        }
    }
}
