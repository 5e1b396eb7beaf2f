import RestockCore
import RestockPipeline
import SeededRandom
import Testing

/// Numbers in requests are read exactly from what is written (docs/contract.md, "How a request payload is
/// read", point 5): a whole number in any notation is that integer, anything else is not an integer, and a
/// whole number out of range, however large, gets the field's own code.
@Suite("Exact numbers in requests (no broker)")
struct RequestNumberTests {
    let alice = customer("alice")

    func subscribe(_ payload: String) -> Result<StoreRequest, RequestRefusal> {
        Result { () throws(RequestRefusal) in try RequestDecoder.subscribe(alice, payload: Array(payload.utf8)) }
    }

    func stock(_ payload: String) -> Result<StoreRequest, RequestRefusal> {
        Result { () throws(RequestRefusal) in try RequestDecoder.stock(payload: Array(payload.utf8)) }
    }

    func refusal(_ result: Result<StoreRequest, RequestRefusal>) -> RequestRefusal? {
        if case .failure(let refusal) = result { return refusal }
        return nil
    }

    @Test(
        "a whole number beyond any Int is valid JSON, refused with the field's code, its limit and the number as written",
        arguments: [
            (#"{"sku":"a","set":1e400}"#, "invalid-quantity", "invalid set 1e400: it must be an integer from 0 to 1000000000"),
            (#"{"sku":"a","add":-1e400}"#, "invalid-quantity", "invalid add -1e400: it must be an integer from -1000000000 to 1000000000"),
            (#"{"sku":"a","set":1e999999999}"#, "invalid-quantity", "invalid set 1e999999999: it must be an integer from 0 to"),
            (#"{"sku":"a","add":1E+99999999999999999999999}"#, "invalid-quantity", "invalid add 1E+99999999999999999999999:"),
            (#"{"sku":"a","minQuantity":1e400}"#, "invalid-min-quantity", "invalid minQuantity 1e400: it must be an integer from 1 to 1000000000"),
            (#"{"sku":"a","minQuantity":-2.5e400}"#, "invalid-min-quantity", "invalid minQuantity -2.5e400:"),
            (#"{"sku":"a","minQuantity":1e19}"#, "invalid-min-quantity", "invalid minQuantity 1e19:"),
        ])
    func beyondAnyInt(payload: String, code: String, detail: String) throws {
        let refused = try #require(refusal(payload.contains("minQuantity") ? subscribe(payload) : stock(payload)), "\(payload) accepted")
        #expect(refused.code.rawValue == code, "\(payload): \(refused)")
        #expect(refused.detail.contains(detail), "\(payload): \(refused.detail)")
    }

    @Test("a number thousands of digits long is judged at once, and shown cut short")
    func longLiterals() throws {
        let ones = "1" + String(repeating: "0", count: 4_000)
        let huge = try #require(refusal(stock(#"{"sku":"a","set":"# + ones + "}")))
        #expect(huge.code.rawValue == "invalid-quantity")
        #expect(huge.detail == "invalid set 1" + String(repeating: "0", count: 39) + "…: it must be an integer from 0 to 1000000000", "\(huge.detail)")
        #expect(huge.detail.count < 120)
        let exponent = try #require(refusal(stock(#"{"sku":"a","add":1e"# + String(repeating: "9", count: 4_000) + "}")))
        #expect(exponent.code.rawValue == "invalid-quantity", "\(exponent)")
        let tiny = try #require(refusal(subscribe(#"{"sku":"a","minQuantity":1e-"# + String(repeating: "9", count: 4_000) + "}")))
        #expect(tiny.code.rawValue == "invalid-field", "\(tiny)")
        // The digits are counted, not multiplied: a thousand such numbers take far less than a second.
        let start = ContinuousClock.now
        for _ in 0..<1_000 { _ = stock(#"{"sku":"a","add":1e"# + String(repeating: "9", count: 4_000) + "}") }
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test(
        "a number that is not whole is invalid-field, however close to a whole number or to 0",
        arguments: [
            #"{"sku":"a","minQuantity":1e-400}"#, #"{"sku":"a","minQuantity":1.0000000000000001}"#,
            #"{"sku":"a","minQuantity":0.9999999999999999999}"#, #"{"sku":"a","minQuantity":-1e-400}"#,
            #"{"sku":"a","minQuantity":12345678901234567890.5}"#, #"{"sku":"a","minQuantity":10.01e1}"#,
        ])
    func notWhole(payload: String) throws {
        let refused = try #require(refusal(subscribe(payload)), "\(payload) accepted")
        #expect(refused.code.rawValue == "invalid-field", "\(payload): \(refused)")
        let written = String(payload.dropFirst(#"{"sku":"a","minQuantity":"#.count).dropLast())
        #expect(refused.detail == "\"minQuantity\" must be an integer from 1 to 1000000000, not \(written)")
        let stockRefusal = try #require(refusal(stock(#"{"sku":"a","set":"# + written + "}")))
        #expect(stockRefusal.code.rawValue == "invalid-field" && stockRefusal.detail.hasPrefix("\"set\" must be an integer from 0 to 1000000000"))
    }

    @Test(
        "a whole number in another notation is that integer, read exactly",
        arguments: [
            ("1.000e3", 1_000), ("100e-2", 1), ("-0", 0), ("0e5", 0), ("10.0e-1", 1), ("0.5e1", 5), ("1E+2", 100),
            ("1e0000000000000000000000000003", 1_000), ("0.000000000000000000000000000001e30", 1), ("-0.0e-999999999999", 0),
            ("1000000000000000000000e-12", 1_000_000_000), ("123456789.00000000000000000000", 123_456_789),
            ("0e99999999999999999999999", 0), ("9.99999999e8", 999_999_999),
        ])
    func wholeElsewise(literal: String, value: Int) throws {
        #expect(try stock(#"{"sku":"a","set":"# + literal + "}").get() == .stock(sku("a"), .set(value)))
        #expect(try stock(#"{"sku":"a","add":"# + literal + "}").get() == .stock(sku("a"), .add(value)))
        if value >= 1 {
            #expect(try subscribe(#"{"sku":"a","minQuantity":"# + literal + "}").get() == .subscribe(alice, sku("a"), mode: .once, minQuantity: value))
        }
    }

    @Test("an unknown field may hold any number, even one beyond every range")
    func unknownNumbers() throws {
        #expect(try subscribe(#"{"sku":"a","note":1e400,"x":[1e-400,-1e99999]}"#).get() == .subscribe(alice, sku("a"), mode: .once, minQuantity: 1))
    }

    @Test(
        "each literal is judged exactly: whole and its Int value, whole beyond Int with its sign, or not whole",
        arguments: [
            ("0", JSONNumber.Value.integer(0)), ("-0", .integer(0)), ("9223372036854775807", .integer(.max)),
            ("-9223372036854775808", .integer(.min)), ("9223372036854775808", .beyondInt(negative: false)),
            ("-9223372036854775809", .beyondInt(negative: true)), ("92233720368547758070e-1", .integer(.max)),
            ("9.223372036854775807e18", .integer(.max)), ("-9.223372036854775808E+18", .integer(.min)),
            ("9.223372036854775808e18", .beyondInt(negative: false)), ("1e18", .integer(1_000_000_000_000_000_000)),
            ("1e19", .beyondInt(negative: false)), ("99999999999999999999", .beyondInt(negative: false)),
            ("0.1", .fraction), ("1e-1", .fraction), ("-5e-1", .fraction), ("0.00000000000000000000", .integer(0)),
            ("1e-99999999999999999999999", .fraction), ("1e99999999999999999999999", .beyondInt(negative: false)),
            ("-1e99999999999999999999999", .beyondInt(negative: true)), ("0.0e-99999999999999999999999", .integer(0)),
        ])
    func judged(literal: String, value: JSONNumber.Value) throws {
        let number = try #require(JSONNumber(literal))
        #expect(number.value == value)
        #expect(number.literal == literal)
        #expect(Self.reference(literal) == value, "the reference disagrees on \(literal)")
    }

    @Test("text that is not a JSON number is not read as one", arguments: ["", "-", "01", "-01", "1.", ".5", "+1", "1e", "1e+", "--1", "1.5.2", "0x10", " 1", "1 ", "1e1.5", "NaN", "Infinity"])
    func notNumbers(text: String) {
        #expect(JSONNumber(text) == nil)
    }

    // MARK: - Generated literals against a plain reference

    /// The plain reference: the number written out in full, digits and a decimal point, and read as text.
    /// Only an exponent too long to write out is reasoned about instead (see below).
    static func reference(_ literal: String) -> JSONNumber.Value? {
        var text = Substring(literal)
        let negative = text.hasPrefix("-")
        if negative { text = text.dropFirst() }
        var exponentText = "0"
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponentText = String(text[text.index(after: e)...])
            text = text[..<e]
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let digits = parts[0] + (parts.count > 1 ? parts[1] : "")
        var point = parts[0].count
        guard digits.contains(where: { $0 != "0" }) else { return .integer(0) }
        let exponentNegative = exponentText.hasPrefix("-")
        let exponentDigits = exponentText.drop { $0 == "+" || $0 == "-" || $0 == "0" }
        // The generated mantissas have fewer than 200 digits: moving their point by more than 99,999 places
        // makes a whole number far beyond Int (to the right), or leaves a non-zero digit after it (to the left).
        guard exponentDigits.count <= 5, let shift = Int(exponentDigits.isEmpty ? "0" : exponentDigits) else {
            return exponentNegative ? .fraction : .beyondInt(negative: negative)
        }
        point += exponentNegative ? -shift : shift
        let padded: String
        if point <= 0 {
            padded = String(repeating: "0", count: 1 - point) + digits
            point = 1
        } else {
            padded = digits + String(repeating: "0", count: max(0, point - digits.count))
        }
        let wholePart = padded.prefix(point).drop { $0 == "0" }
        let fractionPart = padded.dropFirst(point)
        guard fractionPart.allSatisfy({ $0 == "0" }) else { return .fraction }
        if wholePart.isEmpty { return .integer(0) }
        let limit = negative ? "9223372036854775808" : "9223372036854775807"
        if wholePart.count > limit.count || (wholePart.count == limit.count && String(wholePart) > limit) {
            return .beyondInt(negative: negative)
        }
        return Int((negative ? "-" : "") + wholePart).map { .integer($0) }
    }

    /// A random JSON number: signs, leading zeros in exponents, trailing zeros in fractions, huge and tiny.
    static func literal(_ random: inout SplitMix64) -> String {
        func digits(_ count: Int, from pool: String = "0000123456789") -> String {
            String((0..<count).map { _ in pool.randomElement(using: &random) ?? "0" })
        }
        var text = Int.random(in: 0..<10, using: &random) < 3 ? "-" : ""
        if Int.random(in: 0..<10, using: &random) < 4 {
            text += "0"
        } else {
            text += digits(1, from: "123456789") + digits(Int.random(in: 0...24, using: &random))
        }
        if Bool.random(using: &random) {
            text += "." + digits(Int.random(in: 1...24, using: &random), from: Bool.random(using: &random) ? "0" : "0000123456789")
        }
        if Int.random(in: 0..<3, using: &random) > 0 {
            text += ["e", "E"].randomElement(using: &random) ?? "e"
            text += ["", "+", "-"].randomElement(using: &random) ?? ""
            text += String(repeating: "0", count: Int.random(in: 0...3, using: &random))
            switch Int.random(in: 0..<4, using: &random) {
            case 0: text += String(Int.random(in: 0...30, using: &random))
            case 1: text += String(Int.random(in: 0...25, using: &random))
            case 2: text += String(Int.random(in: 0...500, using: &random))
            default: text += digits(1, from: "123456789") + digits(Int.random(in: 5...40, using: &random), from: "0123456789")
            }
        }
        return text
    }

    /// A whole number near an edge (Int's, the request limits'), rewritten with its point moved and an
    /// exponent that moves it back, sometimes with a digit more that makes it not whole.
    static func edgeLiteral(_ random: inout SplitMix64) -> (literal: String, expected: JSONNumber.Value) {
        let edges = [
            "9223372036854775807", "9223372036854775808", "9223372036854775806", "1000000000", "1000000001", "999999999",
            "18446744073709551616", "1", "0",
        ]
        let written = edges.randomElement(using: &random) ?? "1"
        let negative = Bool.random(using: &random)
        let shift = Int.random(in: 0...(written.count + 4), using: &random)
        let padding = String(repeating: "0", count: Int.random(in: 0...3, using: &random))
        let tail = Int.random(in: 0..<4, using: &random) == 0 ? "5" : ""
        let mantissa: String
        if shift < written.count {
            let fraction = String(written.suffix(shift)) + padding + tail
            mantissa = String(written.prefix(written.count - shift)) + (fraction.isEmpty ? "" : "." + fraction)
        } else {
            mantissa = "0." + String(repeating: "0", count: shift - written.count) + written + padding + tail
        }
        let literal = (negative ? "-" : "") + mantissa + (shift == 0 && Bool.random(using: &random) ? "" : "e\(shift)")
        let expected: JSONNumber.Value
        if !tail.isEmpty {
            expected = .fraction
        } else if let value = Int((negative ? "-" : "") + written) {
            expected = .integer(value)
        } else {
            expected = .beyondInt(negative: negative)
        }
        return (literal, expected)
    }

    @Test("the reference agrees with the literals whose value is known by construction", arguments: [UInt64(7), 8])
    func referenceIsRight(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<5_000 {
            let (literal, expected) = Self.edgeLiteral(&random)
            #expect(Self.reference(literal) == expected, "\(literal)")
            #expect(JSONNumber(literal)?.value == expected, "\(literal)")
        }
    }

    @Test("80,000 generated literals: the judgement is the reference's, and so is each request's verdict", arguments: [UInt64(1), 2, 3, 4])
    func againstReference(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        // How often each verdict came up: the generator must reach them all, or the comparison proves little.
        var tally: [String: Int] = [:]
        for round in 0..<20_000 {
            let literal = round % 5 == 0 ? Self.edgeLiteral(&random).literal : Self.literal(&random)
            let expected = try #require(Self.reference(literal), "the reference cannot read \(literal)")
            let number = try #require(JSONNumber(literal), "\(literal) is a JSON number")
            guard number.value == expected else {
                Issue.record("\(literal): judged \(number.value), the reference says \(expected)")
                continue
            }
            // The request's verdict follows from the judgement, for `add` (any sign) and `minQuantity` (≥ 1).
            let add = stock(#"{"sku":"a","add":"# + literal + "}")
            let minQuantity = subscribe(#"{"sku":"a","minQuantity":"# + literal + "}")
            switch expected {
            case .integer(let value):
                tally[RequestLimits.stockAdd.contains(value) ? "within the limits" : "an Int beyond the limits", default: 0] += 1
                if RequestLimits.stockAdd.contains(value) {
                    #expect((try? add.get()) == .stock(sku("a"), .add(value)), "\(literal)")
                } else {
                    #expect(refusal(add)?.detail == "invalid add \(value): it must be an integer from -1000000000 to 1000000000", "\(literal)")
                }
                if RequestLimits.minQuantity.contains(value) {
                    #expect((try? minQuantity.get()) == .subscribe(alice, sku("a"), mode: .once, minQuantity: value), "\(literal)")
                } else {
                    #expect(refusal(minQuantity)?.code.rawValue == "invalid-min-quantity", "\(literal)")
                }
            case .beyondInt:
                tally["beyond Int", default: 0] += 1
                #expect(refusal(add)?.code.rawValue == "invalid-quantity", "\(literal)")
                #expect(refusal(add)?.detail.hasPrefix("invalid add \(literal.prefix(40))") == true, "\(literal)")
                #expect(refusal(minQuantity)?.code.rawValue == "invalid-min-quantity", "\(literal)")
            case .fraction:
                tally["not whole", default: 0] += 1
                #expect(refusal(add)?.code.rawValue == "invalid-field", "\(literal)")
                #expect(refusal(minQuantity)?.code.rawValue == "invalid-field", "\(literal)")
            }
        }
        for verdict in ["within the limits", "an Int beyond the limits", "beyond Int", "not whole"] {
            #expect(tally[verdict, default: 0] >= 1_000, "\(verdict): \(tally)")
        }
    }
}
