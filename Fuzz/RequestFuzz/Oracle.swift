import Foundation
import FuzzSupport
import RestockCore
import RestockMQTT

/// What an assembled request must decode to.
enum Oracle {
    /// Exactly this request.
    case accept(StoreRequest)
    /// A refusal with one of these codes.
    case refuse(Set<String>)
}

/// One field of an assembled JSON request: its text (nil: left out), what it means, and what is wrong with it.
struct Field<Value> {
    /// The `"name":value` member's value as JSON, or nil when the member is left out.
    var json: String?
    /// The value the contract reads (nil: not given, as when left out or null).
    var value: Value?
    /// Codes one of which a refusal must carry because of this field (empty: nothing wrong with it).
    var faults: Set<String> = []
    /// The text is not JSON: the whole payload is invalid-json, whatever else is wrong (the store checks the
    /// JSON before it reads any field).
    var breaksJSON = false
}

/// What a JSON number is, by the contract (docs/contract.md, "How a request payload is read", point 5).
enum Judged: Equatable {
    case integer(Int)
    case beyondInt
    case fraction

    /// The plain reference: the number written out in full, digits and a decimal point, and read as text.
    /// Only an exponent of more than 5 digits is reasoned about instead: the literals assembled here have
    /// mantissas of fewer than 100 digits, so moving their point that far makes a whole number far beyond Int
    /// (to the right) or leaves a non-zero digit after it (to the left). `nil`: not a literal of this harness.
    static func of(_ literal: String) -> Judged? {
        var text = Substring(literal)
        let negative = text.hasPrefix("-")
        if negative { text = text.dropFirst() }
        var exponentText = "0"
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponentText = String(text[text.index(after: e)...])
            text = text[..<e]
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isWholeNumber) }) else { return nil }
        let digits = parts.joined()
        guard digits.contains(where: { $0 != "0" }) else { return .integer(0) }
        let exponentNegative = exponentText.hasPrefix("-")
        let exponentDigits = exponentText.drop { $0 == "+" || $0 == "-" || $0 == "0" }
        guard digits.count < 100 else { return nil }
        guard exponentDigits.count <= 5 else { return exponentNegative ? .fraction : .beyondInt }
        guard let shift = Int(exponentDigits.isEmpty ? "0" : exponentDigits) else { return nil }
        var point = parts[0].count + (exponentNegative ? -shift : shift)
        let padded: String
        if point <= 0 {
            padded = String(repeating: "0", count: 1 - point) + digits
            point = 1
        } else {
            padded = digits + String(repeating: "0", count: max(0, point - digits.count))
        }
        guard padded.dropFirst(point).allSatisfy({ $0 == "0" }) else { return .fraction }
        let whole = String(padded.prefix(point).drop { $0 == "0" })
        if whole.isEmpty { return .integer(0) }
        return Int((negative ? "-" : "") + whole).map(Judged.integer) ?? .beyondInt
    }
}

/// Builds JSON requests from the fuzzer's choices, each with the answer the contract gives.
enum Assembler {
    static let validSKUs: [(json: String, value: String)] = [
        ("x", "x"), ("iphone-15", "iphone-15"), ("A.b_c-9", "A.b_c-9"), (String(repeating: "s", count: 64), String(repeating: "s", count: 64)),
        (#"a\u0062"#, "ab"), ("0", "0"),
    ]
    static let invalidSKUs: [(json: String, value: String)] = [
        ("", ""), ("-x", "-x"), ("a b", "a b"), (String(repeating: "s", count: 65), String(repeating: "s", count: 65)), ("é", "é"),
        ("a/b", "a/b"), ("+", "+"), (#"x\u002Fy"#, "x/y"), (#"x\u0000"#, "x\u{0}"), ("x#", "x#"),
    ]

    static func sku(_ input: inout FuzzInput, required: Bool) -> Field<String> {
        let absent: Set<String> = required ? ["invalid-field"] : []
        switch input.byte() % 8 {
        case 0, 1, 2:
            let choice = input.pick(validSKUs)
            return Field(json: "\"\(choice.json)\"", value: choice.value)
        case 3, 4:
            let choice = input.pick(invalidSKUs)
            return Field(json: "\"\(choice.json)\"", value: choice.value, faults: ["invalid-sku"])
        case 5:
            return Field(json: input.pick(["1", "true", #"["x"]"#, #"{"sku":"x"}"#, "-0", "1.5"]), value: nil, faults: ["invalid-field"])
        case 6:
            return Field(json: "null", value: nil, faults: absent)
        default:
            return Field(json: nil, value: nil, faults: absent)
        }
    }

    /// A number field whose values must lie in `range`: a whole number outside it (however large) is refused
    /// with `rangeCode`, a number that is not whole with invalid-field.
    static func number(_ input: inout FuzzInput, range: ClosedRange<Int>, rangeCode: String) -> Field<Int> {
        func judged(_ json: String) -> Field<Int> {
            guard let verdict = Judged.of(json) else { fatalError("harness: \(json) is not a number literal of the harness") }
            switch verdict {
            case .integer(let value) where range.contains(value): return Field(json: json, value: value)
            case .integer, .beyondInt: return Field(json: json, value: nil, faults: [rangeCode])
            case .fraction: return Field(json: json, value: nil, faults: ["invalid-field"])
            }
        }
        switch input.byte() % 16 {
        case 0: return Field(json: nil, value: nil)
        case 1: return Field(json: "null", value: nil)
        case 2...7:
            return judged(String(input.number()))
        case 8, 9:
            return judged(rewritten(input.number(small: -2...12), &input))
        case 10:
            return judged(input.pick(notable))
        case 11:
            return judged(assembledLiteral(&input))
        case 12:
            return Field(json: input.pick([#""3""#, "true", "[1]", "{}", #""""#, #""1e400""#]), value: nil, faults: ["invalid-field"])
        case 13:
            // Not JSON: refused as such before any field is read.
            let text = input.pick(["+1", "01", "0x10", "NaN", "Infinity", "1.", ".5", "--1", "0.1e1.5", "1e", "1e+", "-", "1E--2", "0e", "1.e3"])
            return Field(json: text, value: nil, breaksJSON: true)
        default:
            return judged(String(FuzzInput.edges[Int(input.byte()) % FuzzInput.edges.count]))
        }
    }

    /// Literals whose reading the contract names, or which once were read wrong (as 0, 1 or invalid-json).
    static let notable = [
        "1e400", "-1e400", "1e999999999", "1E+99999999999999999999999", "-1e99999999999999999999999", "1e-400", "-1e-400",
        "1.0000000000000001", "0.9999999999999999999", "1.000e3", "100e-2", "-0", "0e5", "10.0e-1", "-0.0e-99999999999",
        "3.0", "1e3", "1e9", "1e10", "1.5", "-0.5", "1e-3", "1000000000.5", "1000000000.0", "1000000001e-0", "0.000000001e18",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "9.223372036854775807e18", "92233720368547758080e-1", "1e19", "-1e19", "1e300", "99999999999999999999999999999",
        "0.1", "5e-1", "12345678901234567890.5",
    ]

    /// `value` written another way: its decimal point moved left by a shift and an exponent that moves it back
    /// (`1234` as `12.340e2`, `0.001234e6`, `1234E+0`), sometimes with a digit after it that makes it not whole.
    static func rewritten(_ value: Int, _ input: inout FuzzInput) -> String {
        let digits = String(value.magnitude)
        let shift = Int(input.byte() % 24)
        let zeros = String(repeating: "0", count: Int(input.byte() % 4))
        let style = input.byte()
        let tail = style & 1 != 0 ? "7" : ""
        var mantissa: String
        if shift < digits.count {
            let fraction = String(digits.suffix(shift)) + zeros + tail
            mantissa = String(digits.prefix(digits.count - shift)) + (fraction.isEmpty ? "" : "." + fraction)
        } else {
            mantissa = "0." + String(repeating: "0", count: shift - digits.count) + digits + zeros + tail
        }
        if value < 0 { mantissa = "-" + mantissa }
        let exponentSign = ["", "+", ""][Int(style >> 1) % 3]
        let leadingZeros = String(repeating: "0", count: Int(style >> 3) % 3)
        return mantissa + (style & 0x20 != 0 ? "E" : "e") + exponentSign + leadingZeros + String(shift)
    }

    /// A literal from parts: sign, whole digits, fraction digits (often zeros), and an exponent that is small,
    /// or dozens of digits long, either way.
    static func assembledLiteral(_ input: inout FuzzInput) -> String {
        func digits(_ count: Int, zeros: Bool) -> String {
            String((0..<count).map { _ in zeros ? "0" : Character(String(input.byte() % 10)) })
        }
        let shape = input.byte()
        var text = shape & 1 != 0 ? "-" : ""
        text += shape & 2 != 0 ? "0" : String(1 + input.byte() % 9) + digits(Int(input.byte() % 24), zeros: false)
        if shape & 4 != 0 { text += "." + digits(1 + Int(input.byte() % 24), zeros: shape & 8 != 0) }
        if shape & 16 != 0 {
            text += (shape & 32 != 0 ? "e" : "E") + ["", "+", "-"][Int(input.byte() % 3)] + String(repeating: "0", count: Int(input.byte() % 3))
            text += shape & 64 != 0 ? String(1 + input.byte() % 9) + digits(5 + Int(input.byte() % 40), zeros: false) : String(input.byte() % 40)
        }
        return text
    }

    static func mode(_ input: inout FuzzInput) -> Field<WatchMode> {
        switch input.byte() % 8 {
        case 0, 1: return Field(json: nil, value: nil)
        case 2: return Field(json: "null", value: nil)
        case 3: return Field(json: #""once""#, value: .once)
        case 4: return Field(json: #""every""#, value: .every)
        case 5: return Field(json: input.pick([#""ONCE""#, #""""#, #""always""#, #""every ""#]), value: nil, faults: ["invalid-mode"])
        default: return Field(json: input.pick(["1", "true", #"["once"]"#]), value: nil, faults: ["invalid-field"])
        }
    }

    /// An `expiresAt`: absent, null, a valid RFC 3339 UTC time assembled from parts (0 to 3 digits of a second, so
    /// the time it names is exact), a text that is not one (`invalid-expires-at`), or not a string (`invalid-field`).
    static func expiresAt(_ input: inout FuzzInput) -> Field<Date> {
        switch input.byte() % 8 {
        case 0, 1, 2: return Field(json: nil, value: nil)
        case 3: return Field(json: "null", value: nil)
        case 4, 5:
            let year = 1970 + Int(input.byte()) * 37 % 8030
            let (month, day) = (1 + Int(input.byte()) % 12, 1 + Int(input.byte()) % 28)
            let (hour, minute, second) = (Int(input.byte()) % 24, Int(input.byte()) % 60, Int(input.byte()) % 60)
            let digits = Int(input.byte()) % 4
            let scale = [1, 10, 100, 1000][digits]
            let fraction = Int(input.byte()) * 7 % scale
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let whole = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second))!
            let exact = whole.timeIntervalSince1970 + Double(fraction) / Double(scale)
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, hour, minute, second)
                + (digits == 0 ? "" : "." + String(String(fraction + scale).dropFirst())) + "Z"
            // What the store keeps of it: SubscribeRequest's own millisecond.
            let kept = (try? SubscribeRequest(sku: SKU("a"), expiresAt: Date(timeIntervalSince1970: exact)))?.expiresAt
            return Field(json: "\"\(text)\"", value: kept)
        case 6:
            let texts = [
                "2027-02-29T00:00:00Z", "2027-05-20T12:00:00", "2027-05-20T12:00:00+00:00", "tomorrow", "", "2027-05-20 12:00:00Z",
                "1969-12-31T23:59:59Z", "2027-05-20T24:00:00Z", "2027-05-20T12:00:00.Z",
            ]
            return Field(json: "\"\(input.pick(texts))\"", value: nil, faults: ["invalid-expires-at"])
        default: return Field(json: input.pick(["1", "true", #"["2027-05-20T12:00:00Z"]"#]), value: nil, faults: ["invalid-field"])
        }
    }

    static func all(_ input: inout FuzzInput) -> Field<Bool> {
        switch input.byte() % 8 {
        case 0, 1, 2: return Field(json: nil, value: nil)
        case 3: return Field(json: "null", value: nil)
        case 4, 5: return Field(json: "true", value: true)
        case 6: return Field(json: "false", value: false)
        default: return Field(json: input.pick([#""true""#, "1", "[true]"]), value: nil, faults: ["invalid-field"])
        }
    }

    /// The faults of a set of fields. When several fields are wrong, any of their codes may be the one reported;
    /// but a field that is not JSON makes the payload invalid-json, whatever else is wrong.
    struct Faults {
        var codes: Set<String> = []
        var breaksJSON = false
        mutating func add<T>(_ field: Field<T>) {
            codes.formUnion(field.faults)
            breaksJSON = breaksJSON || field.breaksJSON
        }
    }

    /// A byte order mark before the payload: none, one at the start, one after the leading whitespace (each
    /// ignored), or two (the second is part of the payload).
    enum Mark: CaseIterable {
        case none, atStart, afterWhitespace, twice

        func apply(leading: String, rest: String) -> String {
            switch self {
            case .none: leading + rest
            case .atStart: "\u{FEFF}" + leading + rest
            case .afterWhitespace: leading + "\u{FEFF}" + rest
            case .twice: "\u{FEFF}" + leading + "\u{FEFF}" + rest
            }
        }
    }

    static func assemble(kind: RestockTopics.Request, customer: CustomerID?, _ input: inout FuzzInput) -> (payload: [UInt8], oracle: Oracle?) {
        let layout = input.byte()
        var members: [(String, String?)] = []
        var faults = Faults()
        var request: StoreRequest?

        if layout % 4 == 0, kind != .stock, kind != .forget, kind != .deadLetter {
            // A bare SKU.
            let valid = input.byte() % 2 == 0
            let choice = input.pick((valid ? validSKUs : invalidSKUs).filter { !$0.json.contains("\\") })
            let mark = input.pick(Mark.allCases)
            let text = mark.apply(leading: input.pick(["", " ", "\n", " \t\r\n"]), rest: choice.value + input.pick(["", " ", "\n"]))
            guard mark != .twice, let sku = try? SKU(choice.value) else { return (Array(text.utf8), .refuse(["invalid-sku"])) }
            if case .subscribe = kind { return (Array(text.utf8), .accept(.subscribe(customer!, sku, mode: .once, minQuantity: 1))) }
            return (Array(text.utf8), .accept(.unsubscribe(customer!, sku)))
        }

        switch kind {
        case .subscribe:
            let sku = sku(&input, required: true)
            let mode = mode(&input)
            let minQuantity = number(&input, range: 1...Limits.maximumQuantity, rangeCode: "invalid-min-quantity")
            let expiresAt = expiresAt(&input)
            faults.add(sku)
            faults.add(mode)
            faults.add(minQuantity)
            faults.add(expiresAt)
            members = [("sku", sku.json), ("mode", mode.json), ("minQuantity", minQuantity.json), ("expiresAt", expiresAt.json)]
            if let value = sku.value, let skuID = try? SKU(value) {
                request = .subscribe(customer!, skuID, mode: mode.value ?? .once, minQuantity: minQuantity.value ?? 1, expiresAt: expiresAt.value)
            }
        case .unsubscribe:
            let sku = sku(&input, required: false)
            let all = all(&input)
            faults.add(sku)
            faults.add(all)
            members = [("sku", sku.json), ("all", all.json)]
            if all.value == true {
                if sku.value != nil || (sku.json != nil && sku.json != "null") { faults.codes.insert("invalid-field") }
                request = .unsubscribeAll(customer!)
            } else if let value = sku.value {
                if let skuID = try? SKU(value) { request = .unsubscribe(customer!, skuID) }
            } else {
                faults.codes.insert("invalid-field")
            }
        case .deadLetter:
            // Exactly one of replay and drop, a whole number from 1 (out of range is a bad field: it is no id).
            let replay = number(&input, range: 1...Int.max, rangeCode: "invalid-field")
            let drop = number(&input, range: 1...Int.max, rangeCode: "invalid-field")
            faults.add(replay)
            faults.add(drop)
            members = [("replay", replay.json), ("drop", drop.json)]
            let givenReplay = replay.json != nil && replay.json != "null"
            let givenDrop = drop.json != nil && drop.json != "null"
            if givenReplay == givenDrop { faults.codes.insert("invalid-field") }
            if let id = replay.value { request = .deadLetter(.replay(Int64(id))) }
            if let id = drop.value { request = .deadLetter(.drop(Int64(id))) }
        case .forget:
            // The customer is the payload's: the same identifiers as SKUs, refused as invalid-customer.
            var who = sku(&input, required: true)
            if who.faults.remove("invalid-sku") != nil { who.faults.insert("invalid-customer") }
            faults.add(who)
            members = [("customer", who.json)]
            if let value = who.value, let id = try? CustomerID(value) { request = .forget(id) }
        case .stock:
            let sku = sku(&input, required: true)
            let set = number(&input, range: 0...Limits.maximumQuantity, rangeCode: "invalid-quantity")
            let add = number(&input, range: -Limits.maximumQuantity...Limits.maximumQuantity, rangeCode: "invalid-quantity")
            faults.add(sku)
            faults.add(set)
            faults.add(add)
            members = [("sku", sku.json), ("set", set.json), ("add", add.json)]
            // Exactly one of set and add is given (null counts as not given).
            let givenSet = set.json != nil && set.json != "null"
            let givenAdd = add.json != nil && add.json != "null"
            if givenSet == givenAdd { faults.codes.insert("invalid-field") }
            if let value = sku.value, let skuID = try? SKU(value) {
                if let quantity = set.value { request = .stock(skuID, .set(quantity)) }
                if let delta = add.value { request = .stock(skuID, .add(delta)) }
            }
        }

        // Member order, an unknown member, spacing.
        if layout & 4 != 0 { members.reverse() }
        if layout & 8 != 0 {
            members.insert(("note", input.pick([#""x""#, "null", #"{"nested":[1,2,{"a":null}]}"#, "1e400"])), at: Int(input.byte()) % (members.count + 1))
        }
        let space = layout & 16 != 0 ? " " : ""
        let body = members.compactMap { name, json in json.map { "\"\(name)\":\(space)\($0)" } }.joined(separator: ",\(space)")
        let mark = input.pick(Mark.allCases)
        var text = mark.apply(leading: layout & 32 != 0 ? "\n " : "", rest: "{\(space)\(body)\(space)}" + (layout & 64 != 0 ? "\n" : ""))
        var tooLarge = false
        if layout & 128 != 0 {
            // Pad with trailing spaces to the limit, or one byte past it.
            let target = Limits.payloadBytes + Int(input.byte() % 2)
            if text.utf8.count < target { text += String(repeating: " ", count: target - text.utf8.count) }
            tooLarge = text.utf8.count > Limits.payloadBytes
        }

        let oracle: Oracle
        if tooLarge {
            oracle = .refuse(["payload-too-large"])
        } else if mark == .twice {
            // The second mark starts the payload: a bare SKU that is not an identifier, or no JSON object.
            oracle = .refuse([kind == .stock || kind == .forget || kind == .deadLetter ? "invalid-json" : "invalid-sku"])
        } else if faults.breaksJSON {
            oracle = .refuse(["invalid-json"])
        } else if !faults.codes.isEmpty {
            oracle = .refuse(faults.codes)
        } else if let request {
            oracle = .accept(request)
        } else {
            fatalError("harness: an assembled request without faults has no request: \(text)")
        }
        return (Array(text.utf8), oracle)
    }
}
