import Foundation

/// The JSON rules a request object must keep beyond what Foundation's parser checks (docs/contract.md,
/// "Requests"): the grammar of RFC 8259 exactly — no trailing comma, no comment, no bare word — no name twice
/// in one object, and at most ``maximumDepth`` objects and arrays inside each other.
///
/// Foundation accepts `{"sku":"a",}` and takes the first of two `"sku"`s; a request that a proxy or an ACL
/// tool reads one way must not be applied another way. One pass over the bytes, no recursion.
enum StrictJSON {
    /// How deeply objects and arrays may nest (a request itself is one level).
    static let maximumDepth = 32

    /// Why `bytes` is not one strict JSON value, or `nil` when it is.
    static func problem(in bytes: [UInt8]) -> String? {
        var scanner = Scanner(bytes: bytes)
        return scanner.document()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        /// For each open object, the names seen so far; `nil` for an open array.
        var open: [Set<[UInt8]>?] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        /// The whole document: one value and nothing after it.
        mutating func document() -> String? {
            // Each step reads one token; containers are tracked in `open`, so depth costs no stack.
            var expectValue = true
            skipWhitespace()
            while true {
                if expectValue {
                    guard let byte = current else { return "the payload ends where a value belongs" }
                    switch byte {
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        guard open.count < StrictJSON.maximumDepth else {
                            return "objects and arrays nest more than \(StrictJSON.maximumDepth) deep"
                        }
                        index += 1
                        skipWhitespace()
                        if byte == UInt8(ascii: "{") {
                            open.append([])
                            if current == UInt8(ascii: "}") {
                                index += 1
                                open.removeLast()
                            } else if let problem = name() {
                                return problem
                            } else {
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
                        if let problem = string(keepingName: false).problem { return problem }
                    default:
                        if let problem = scalar() { return problem }
                    }
                }
                // After a value: a comma, the end of the container, or the end of the document.
                skipWhitespace()
                guard let container = open.last else {
                    return current == nil ? nil : "there is more after the JSON value"
                }
                guard let byte = current else { return "the payload ends inside an object or array" }
                let closing = container == nil ? UInt8(ascii: "]") : UInt8(ascii: "}")
                if byte == closing {
                    index += 1
                    open.removeLast()
                    expectValue = false
                    continue
                }
                guard byte == UInt8(ascii: ",") else { return "a comma or the end of the object or array belongs here" }
                index += 1
                skipWhitespace()
                if current == closing { return "a trailing comma" }
                if container != nil, let problem = name() { return problem }
                expectValue = true
            }
        }

        /// A name and its colon, inside the innermost object; refuses a name seen before in it.
        mutating func name() -> String? {
            guard current == UInt8(ascii: "\"") else { return "a name in double quotes belongs here" }
            let read = string(keepingName: true)
            if let problem = read.problem { return problem }
            let inserted = open[open.count - 1]?.insert(read.name).inserted ?? true
            guard inserted else { return "the name \"\(String(decoding: read.name, as: UTF8.self))\" appears twice in one object" }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return "a colon belongs after a name" }
            index += 1
            skipWhitespace()
            return nil
        }

        /// A string starting at the opening quote. A name is kept as it reads once its escapes are resolved, so
        /// that `"sku"` and `"s\u006bu"` are one name, given twice.
        mutating func string(keepingName: Bool) -> (name: [UInt8], problem: String?) {
            index += 1
            let start = index
            var escaped = false
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    var name = keepingName ? Array(bytes[start..<index]) : []
                    if keepingName, escaped {
                        // The string is well formed (checked above): the decoder resolves its escapes.
                        let quoted = Data([UInt8(ascii: "\"")] + name + [UInt8(ascii: "\"")])
                        name = (try? JSONDecoder().decode(String.self, from: quoted)).map { Array($0.utf8) } ?? name
                    }
                    index += 1
                    return (name, nil)
                case UInt8(ascii: "\\"):
                    index += 1
                    escaped = true
                    guard let escapedByte = current else { return ([], "the payload ends inside a string") }
                    if escapedByte == UInt8(ascii: "u") {
                        for _ in 0..<4 {
                            index += 1
                            guard let hex = current, hex.isHexDigit else { return ([], "a \\u escape needs four hex digits") }
                        }
                    } else if !Array("\"\\/bfnrt".utf8).contains(escapedByte) {
                        return ([], "an unknown escape in a string")
                    }
                    index += 1
                case 0x00...0x1F:
                    return ([], "a control character inside a string")
                default:
                    index += 1
                }
            }
            return ([], "the payload ends inside a string")
        }

        /// A number, `true`, `false` or `null`.
        mutating func scalar() -> String? {
            for word in ["true", "false", "null"] where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return nil
            }
            // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, first.isDigit else { return "a value belongs here (a string, number, object, array, true, false or null)" }
            index += 1
            if first != UInt8(ascii: "0") { while current?.isDigit == true { index += 1 } }
            if current == UInt8(ascii: ".") {
                index += 1
                guard current?.isDigit == true else { return "a digit belongs after a decimal point" }
                while current?.isDigit == true { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard current?.isDigit == true else { return "a digit belongs in an exponent" }
                while current?.isDigit == true { index += 1 }
            }
            return nil
        }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    fileprivate var isHexDigit: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
