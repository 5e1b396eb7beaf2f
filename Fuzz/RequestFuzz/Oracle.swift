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
    /// Text the contract leaves open (a whole number written as `5.0` or `1e3`): accepted as `value`, or
    /// refused with one of these codes.
    var openCodes: Set<String> = []
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

    /// A number field whose values must lie in `range`; out of it, or not a whole number, it is refused with one of `codes`.
    static func number(_ input: inout FuzzInput, range: ClosedRange<Int>, codes: Set<String>) -> Field<Int> {
        func judged(_ json: String, _ value: Int, open: Bool = false) -> Field<Int> {
            if !range.contains(value) { return Field(json: json, value: value, faults: codes) }
            return Field(json: json, value: value, openCodes: open ? codes : [])
        }
        switch input.byte() % 16 {
        case 0: return Field(json: nil, value: nil)
        case 1: return Field(json: "null", value: nil)
        case 2...8:
            let value = input.number()
            return judged(String(value), value)
        case 9:
            // Whole numbers in other notations.
            let value = input.number(small: -2...12)
            switch input.byte() % 3 {
            case 0: return judged("\(value).0", value, open: true)
            case 1: return judged("\(value)e0", value, open: true)
            default:
                return value.magnitude < 1 << 53 ? judged("\(Double(value))", value, open: true) : Field(json: "\(Double(value))", value: nil, faults: codes)
            }
        case 10:
            return judged("-0", 0)
        case 11:
            // Beyond Int, or not whole.
            let text = input.pick([
                "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e19", "-1e19", "1e300", "-1e300",
                "1.5", "-0.5", "1e-3", "0.1e1.5", "1000000000.5", "99999999999999999999999999999",
            ])
            return Field(json: text, value: nil, faults: text == "0.1e1.5" ? codes.union(["invalid-json"]) : codes)
        case 12:
            return Field(json: input.pick([#""3""#, "true", "[1]", "{}", #""""#]), value: nil, faults: ["invalid-field"])
        case 13:
            // Not JSON. The decoder may read a number only when it gets to its field, and so report it as
            // that field's fault, or report an earlier field's fault first.
            return Field(json: input.pick(["+1", "01", "0x10", "NaN", "Infinity", "1.", ".5", "--1"]), value: nil, faults: codes.union(["invalid-json"]))
        default:
            let value = FuzzInput.edges[Int(input.byte()) % FuzzInput.edges.count]
            return judged(String(value), value)
        }
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

    static func all(_ input: inout FuzzInput) -> Field<Bool> {
        switch input.byte() % 8 {
        case 0, 1, 2: return Field(json: nil, value: nil)
        case 3: return Field(json: "null", value: nil)
        case 4, 5: return Field(json: "true", value: true)
        case 6: return Field(json: "false", value: false)
        default: return Field(json: input.pick([#""true""#, "1", "[true]"]), value: nil, faults: ["invalid-field"])
        }
    }

    /// The faults of a set of fields. When several fields are wrong, any of their codes may be the one reported.
    struct Faults {
        var codes: Set<String> = []
        var open: Set<String> = []
        mutating func add<T>(_ field: Field<T>) {
            codes.formUnion(field.faults)
            open.formUnion(field.openCodes)
        }
    }

    static func assemble(kind: RestockTopics.Request, customer: CustomerID?, _ input: inout FuzzInput) -> (payload: [UInt8], oracle: Oracle?) {
        let layout = input.byte()
        var members: [(String, String?)] = []
        var faults = Faults()
        var request: StoreRequest?

        if layout % 4 == 0, kind != .stock {
            // A bare SKU.
            let valid = input.byte() % 2 == 0
            let choice = input.pick((valid ? validSKUs : invalidSKUs).filter { !$0.json.contains("\\") })
            let text = input.pick(["", " ", "\n", " \t\r\n"]) + choice.value + input.pick(["", " ", "\n"])
            guard let sku = try? SKU(choice.value) else { return (Array(text.utf8), .refuse(["invalid-sku"])) }
            if case .subscribe = kind { return (Array(text.utf8), .accept(.subscribe(customer!, sku, mode: .once, minQuantity: 1))) }
            return (Array(text.utf8), .accept(.unsubscribe(customer!, sku)))
        }

        switch kind {
        case .subscribe:
            let sku = sku(&input, required: true)
            let mode = mode(&input)
            let minQuantity = number(&input, range: 1...Limits.maximumQuantity, codes: ["invalid-field", "invalid-min-quantity"])
            faults.add(sku)
            faults.add(mode)
            faults.add(minQuantity)
            members = [("sku", sku.json), ("mode", mode.json), ("minQuantity", minQuantity.json)]
            if let value = sku.value, let skuID = try? SKU(value) {
                request = .subscribe(customer!, skuID, mode: mode.value ?? .once, minQuantity: minQuantity.value ?? 1)
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
        case .stock:
            let sku = sku(&input, required: true)
            let codes: Set<String> = ["invalid-field", "invalid-quantity"]
            let set = number(&input, range: 0...Limits.maximumQuantity, codes: codes)
            let add = number(&input, range: -Limits.maximumQuantity...Limits.maximumQuantity, codes: codes)
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
        var text = (layout & 32 != 0 ? "\n " : "") + "{\(space)\(body)\(space)}" + (layout & 64 != 0 ? "\n" : "")
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
        } else if !faults.codes.isEmpty {
            oracle = .refuse(faults.codes.union(faults.open))
        } else if !faults.open.isEmpty {
            return (Array(text.utf8), nil)
        } else if let request {
            oracle = .accept(request)
        } else {
            fatalError("harness: an assembled request without faults has no request: \(text)")
        }
        return (Array(text.utf8), oracle)
    }
}
