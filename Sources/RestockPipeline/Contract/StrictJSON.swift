/// The JSON a request object must be (docs/contract.md, "How a request payload is read"): the grammar of
/// RFC 8259 exactly — no trailing comma, no comment, no bare word — no name twice in one object, no `\u`
/// escape of half a surrogate pair, and at most ``maximumDepth`` objects and arrays inside each other.
///
/// Foundation accepts `{"sku":"a",}` and takes the first of two `"sku"`s; a request that a proxy or an ACL
/// tool reads one way must not be applied another way. So the same pass that checks the bytes also gives
/// back the top-level members the request is read from (Requests.swift), numbers as written. One pass over
/// the bytes, no recursion, no Foundation.
package enum StrictJSON {
    /// How deeply objects and arrays may nest (a request itself is one level).
    static let maximumDepth = 32

    /// One member of the top-level object.
    package struct Member: Sendable, Hashable {
        /// The name with its escapes resolved: `"s\u006bu"` is `sku`.
        package let name: String
        package let value: JSONValue
    }

    /// Why the bytes are not one strict JSON value.
    package struct Problem: Error, Sendable, Hashable {
        package let reason: String
    }

    /// The members of the top-level object of `bytes`, in the order given; none when the value is not an object.
    /// - Throws: ``Problem`` when `bytes` is not one strict JSON value.
    package static func members(in bytes: [UInt8]) throws(Problem) -> [Member] {
        var scanner = Scanner(bytes: bytes)
        try scanner.document()
        return scanner.members
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        /// For each open object, the names seen so far; `nil` for an open array.
        var open: [Set<[UInt8]>?] = []
        /// The top-level object's members read so far.
        var members: [Member] = []
        /// The name of the top-level member whose value comes next.
        var memberName = ""

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        /// Whether the value being read is a member of the top-level object.
        var atTopLevel: Bool { open.count == 1 && open[0] != nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func keep(_ value: JSONValue) {
            members.append(Member(name: memberName, value: value))
        }

        /// The whole document: one value and nothing after it.
        mutating func document() throws(Problem) {
            // Each step reads one token; containers are tracked in `open`, so depth costs no stack.
            var expectValue = true
            skipWhitespace()
            while true {
                if expectValue {
                    guard let byte = current else { throw Problem(reason: "the payload ends where a value belongs") }
                    switch byte {
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        guard open.count < StrictJSON.maximumDepth else {
                            throw Problem(reason: "objects and arrays nest more than \(StrictJSON.maximumDepth) deep")
                        }
                        if atTopLevel { keep(byte == UInt8(ascii: "{") ? .object : .array) }
                        index += 1
                        skipWhitespace()
                        if byte == UInt8(ascii: "{") {
                            open.append([])
                            if current == UInt8(ascii: "}") {
                                index += 1
                                open.removeLast()
                            } else {
                                try name()
                                continue  // a name was read: its value follows
                            }
                        } else {
                            open.append(nil)
                            if current == UInt8(ascii: "]") {
                                index += 1
                                open.removeLast()
                            } else {
                                continue  // the first element follows
                            }
                        }
                    case UInt8(ascii: "\""):
                        let resolve = atTopLevel
                        let text = try string(resolving: resolve)
                        if resolve { keep(.string(String(decoding: text, as: UTF8.self))) }
                    default:
                        let judging = atTopLevel
                        if let value = try scalar(judgingNumber: judging), judging { keep(value) }
                    }
                }
                // After a value: a comma, the end of the container, or the end of the document.
                skipWhitespace()
                guard let container = open.last else {
                    guard current == nil else { throw Problem(reason: "there is more after the JSON value") }
                    return
                }
                guard let byte = current else { throw Problem(reason: "the payload ends inside an object or array") }
                let closing = container == nil ? UInt8(ascii: "]") : UInt8(ascii: "}")
                if byte == closing {
                    index += 1
                    open.removeLast()
                    expectValue = false
                    continue
                }
                guard byte == UInt8(ascii: ",") else { throw Problem(reason: "a comma or the end of the object or array belongs here") }
                index += 1
                skipWhitespace()
                if current == closing { throw Problem(reason: "a trailing comma") }
                if container != nil { try name() }
                expectValue = true
            }
        }

        /// A name and its colon, inside the innermost object; refuses a name seen before in it.
        mutating func name() throws(Problem) {
            guard current == UInt8(ascii: "\"") else { throw Problem(reason: "a name in double quotes belongs here") }
            let name = try string(resolving: true)
            let inserted = open[open.count - 1]?.insert(name).inserted ?? true
            guard inserted else {
                throw Problem(reason: "the name \"\(String(decoding: name, as: UTF8.self))\" appears twice in one object")
            }
            if atTopLevel { memberName = String(decoding: name, as: UTF8.self) }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw Problem(reason: "a colon belongs after a name") }
            index += 1
            skipWhitespace()
        }

        /// A string starting at the opening quote. With `resolving`, its bytes as they read once the escapes
        /// are resolved (so that `"sku"` and `"s\u006bu"` are one name, given twice); otherwise none.
        mutating func string(resolving: Bool) throws(Problem) -> [UInt8] {
            index += 1
            let start = index
            var escaped = false
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    let text = bytes[start..<index]
                    index += 1
                    guard resolving else { return [] }
                    return escaped ? Self.resolve(text) : Array(text)
                case UInt8(ascii: "\\"):
                    index += 1
                    escaped = true
                    guard let escapedByte = current else { throw Problem(reason: "the payload ends inside a string") }
                    switch escapedByte {
                    case UInt8(ascii: "u"):
                        guard let unit = hexUnit(at: index + 1) else { throw Problem(reason: "a \\u escape needs four hex digits") }
                        index += 5
                        // RFC 8259 leaves a lone surrogate's meaning open (section 8.2); a request is refused
                        // rather than read one way here and another way by a proxy.
                        let lone = Problem(reason: "a \\u escape of half a surrogate pair, without the other half")
                        if (0xD800...0xDBFF).contains(unit) {
                            guard bytes[index...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]),
                                let low = hexUnit(at: index + 2), (0xDC00...0xDFFF).contains(low)
                            else { throw lone }
                            index += 6
                        } else if (0xDC00...0xDFFF).contains(unit) {
                            throw lone
                        }
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    default:
                        throw Problem(reason: "an unknown escape in a string")
                    }
                case 0x00...0x1F:
                    throw Problem(reason: "a control character inside a string")
                default:
                    index += 1
                }
            }
            throw Problem(reason: "the payload ends inside a string")
        }

        /// The four hex digits at `position` as a UTF-16 code unit, or `nil` when they are not there.
        func hexUnit(at position: Int) -> UInt32? {
            guard position >= 0, position + 4 <= bytes.count else { return nil }
            var unit: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = Self.hexValue(byte) else { return nil }
                unit = unit << 4 | digit
            }
            return unit
        }

        static func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        /// The UTF-8 of a string's contents checked by ``string(resolving:)``, its escapes resolved.
        static func resolve(_ text: ArraySlice<UInt8>) -> [UInt8] {
            var resolved: [UInt8] = []
            resolved.reserveCapacity(text.count)
            var index = text.startIndex
            func unit(at position: Int) -> UInt32 {
                guard position + 4 <= text.endIndex else { return 0xFFFD }
                return text[position..<position + 4].reduce(UInt32(0)) { $0 << 4 | (hexValue($1) ?? 0) }
            }
            while index < text.endIndex {
                let byte = text[index]
                guard byte == UInt8(ascii: "\\"), index + 1 < text.endIndex else {
                    resolved.append(byte)
                    index += 1
                    continue
                }
                let escaped = text[index + 1]
                index += 2
                switch escaped {
                case UInt8(ascii: "b"): resolved.append(0x08)
                case UInt8(ascii: "f"): resolved.append(0x0C)
                case UInt8(ascii: "n"): resolved.append(0x0A)
                case UInt8(ascii: "r"): resolved.append(0x0D)
                case UInt8(ascii: "t"): resolved.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = unit(at: index)
                    index += 4
                    if (0xD800...0xDBFF).contains(scalar) {
                        // The scan checked that the low half follows, as \uXXXX.
                        let low = unit(at: index + 2)
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + ((low &- 0xDC00) & 0x3FF)
                        index += 6
                    }
                    UTF8.encode(Unicode.Scalar(scalar) ?? "\u{FFFD}") { resolved.append($0) }
                default: resolved.append(escaped)  // \" \\ \/
                }
            }
            return resolved
        }

        /// A number, `true`, `false` or `null`; a number only when `judgingNumber` (``JSONNumber``), else `nil`.
        mutating func scalar(judgingNumber: Bool) throws(Problem) -> JSONValue? {
            let word: (text: String, value: JSONValue)? =
                switch current {
                case UInt8(ascii: "t"): ("true", .bool(true))
                case UInt8(ascii: "f"): ("false", .bool(false))
                case UInt8(ascii: "n"): ("null", .null)
                default: nil
                }
            if let word {
                guard bytes[index...].starts(with: word.text.utf8) else {
                    throw Problem(reason: "a value belongs here (a string, number, object, array, true, false or null)")
                }
                index += word.text.utf8.count
                return word.value
            }
            // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, first.isDigit else {
                throw Problem(reason: "a value belongs here (a string, number, object, array, true, false or null)")
            }
            index += 1
            if first != UInt8(ascii: "0") { while current?.isDigit == true { index += 1 } }
            if current == UInt8(ascii: ".") {
                index += 1
                guard current?.isDigit == true else { throw Problem(reason: "a digit belongs after a decimal point") }
                while current?.isDigit == true { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard current?.isDigit == true else { throw Problem(reason: "a digit belongs in an exponent") }
                while current?.isDigit == true { index += 1 }
            }
            guard judgingNumber else { return nil }
            // The literal was just scanned by the same grammar, so it always reads.
            guard let number = JSONNumber(literal: bytes[start..<index]) else { throw Problem(reason: "a number that cannot be read") }
            return .number(number)
        }
    }
}
