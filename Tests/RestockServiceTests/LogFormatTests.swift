import Foundation
import Logging
import RestockMQTT
import SeededRandom
import Synchronization
import Testing

/// `--log-format json` (docs/operations.md, "Logs"): every entry is one line of valid JSON, whatever it holds.
@Suite("Log lines as JSON")
struct LogFormatTests {
    /// Characters that break hand-written JSON: quotes, backslashes, every control character, line and paragraph
    /// separators, surrogate-pair emoji, combining marks, a byte order mark, and the replacement character.
    static let awkward: [Character] =
        ["\"", "\\", "/", "'", "\u{7F}", "\u{2028}", "\u{2029}", "😀", "e\u{301}", "\u{FEFF}", "\u{FFFD}", "\u{10FFFF}", "é", "{", "}"]
        + (0..<32).map { Character(Unicode.Scalar(UInt8($0))) }

    static func string(_ random: inout SplitMix64) -> String {
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            // Arbitrary bytes, decoded the way input that is not UTF-8 ends up in a String.
            return String(decoding: (0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self)
        default:
            return String((0..<Int.random(in: 0..<40, using: &random)).map { _ in
                Bool.random(using: &random) ? awkward.randomElement(using: &random)! : Character(Unicode.Scalar(UInt8.random(in: 32...126, using: &random)))
            })
        }
    }

    static func value(_ random: inout SplitMix64, depth: Int = 0) -> Logger.MetadataValue {
        switch depth < 2 ? Int.random(in: 0..<4, using: &random) : 0 {
        case 0: .string(string(&random))
        case 1: .stringConvertible(string(&random))
        case 2: .array((0..<Int.random(in: 0..<3, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default: .dictionary(Dictionary((0..<Int.random(in: 0..<3, using: &random)).map { _ in (string(&random), value(&random, depth: depth + 1)) }) { $1 })
        }
    }

    /// What a metadata value reads as once parsed back.
    static func plain(_ value: Logger.MetadataValue) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let text): text.description
        case .array(let values): values.map(plain)
        case .dictionary(let values): values.mapValues(plain)
        }
    }

    @Test("any message, label and metadata make one line that parses back to them (2,000 seeded cases)")
    func anyContentIsValidJSON() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["RESTOCK_TEST_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        for index in 0..<2_000 {
            let (label, message) = (Self.string(&random), Self.string(&random))
            let metadata = Dictionary((0..<Int.random(in: 0..<4, using: &random)).map { _ in (Self.string(&random), Self.value(&random)) }) { $1 }
            let level = Logger.Level.allCases.randomElement(using: &random)!
            let lines = Mutex<[[UInt8]]>([])
            var handler = JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
            handler.logLevel = .trace
            Logger(label: label) { _ in handler }.log(level: level, "\(message)", metadata: metadata)
            let line = try #require(lines.withLock { $0 }.first, "case \(index), seed \(seed)")
            let context = "case \(index), seed \(seed) (RESTOCK_TEST_SEED=\(seed) replays it): \(String(decoding: line, as: UTF8.self))"
            #expect(line.last == UInt8(ascii: "\n") && line.filter { $0 == UInt8(ascii: "\n") }.count == 1, "\(context)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], "\(context)")
            #expect(object["message"] as? String == message, "\(context)")
            #expect(object["label"] as? String == label, "\(context)")
            #expect(object["level"] as? String == level.rawValue, "\(context)")
            #expect((object["timestamp"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(context)")
            let parsed = try #require(object["metadata"] as? NSDictionary, "\(context)")
            #expect(parsed.isEqual(to: metadata.mapValues(Self.plain)), "\(context)")
        }
    }
}
