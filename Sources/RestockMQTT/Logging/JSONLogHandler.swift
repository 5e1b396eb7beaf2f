import Foundation
import Logging
import RestockCore

/// A log handler that writes each entry as one JSON object on one line (`restock serve --log-format json`):
/// `{"label":…,"level":…,"message":…,"metadata":{…},"timestamp":"2026-11-21T19:41:47.528Z"}`, keys sorted, the time in
/// UTC with milliseconds. Whatever the message or the metadata hold (quotes, newlines, control characters, a byte order
/// mark), the line is valid JSON in ASCII: every other character is escaped. (`JSONSerialization` is not used: it
/// writes U+FEFF raw, and Foundation's own reader then drops it.)
public struct JSONLogHandler: LogHandler {
    /// The logger's label (`restock.store`).
    public let label: String
    /// The lowest level written.
    public var logLevel: Logger.Level = .info
    /// Metadata added to every entry.
    public var metadata: Logger.Metadata = [:]
    private let output: @Sendable ([UInt8]) -> Void

    /// A handler writing to standard error, as swift-log's text handler does.
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label) { line in
            line.withUnsafeBufferPointer { bytes in
                var written = 0
                while written < bytes.count {
                    let result = write(STDERR_FILENO, bytes.baseAddress! + written, bytes.count - written)
                    if result > 0 { written += result } else if result < 0, errno == EINTR { continue } else { return }
                }
            }
        }
    }

    /// A handler that hands each line, with its newline, to `output` (tests).
    package init(label: String, output: @escaping @Sendable ([UInt8]) -> Void) {
        self.label = label
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        output(Self.line(level: event.level, message: "\(event.message)", label: label, metadata: merged, at: Date()))
    }

    /// One entry as a line of JSON, with its newline.
    package static func line(level: Logger.Level, message: String, label: String, metadata: Logger.Metadata, at date: Date) -> [UInt8] {
        var line = "{\"label\":"
        encode(label, to: &line)
        line += ",\"level\":\"\(level.rawValue)\",\"message\":"
        encode(message, to: &line)
        line += ",\"metadata\":"
        encode(.dictionary(metadata), to: &line)
        line += ",\"timestamp\":\"\(Timestamp.string(from: date))\"}\n"
        return Array(line.utf8)
    }

    private static func encode(_ value: Logger.Metadata.Value, to line: inout String) {
        switch value {
        case .string(let text): encode(text, to: &line)
        case .stringConvertible(let convertible): encode(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, value) in values.enumerated() {
                if index > 0 { line += "," }
                encode(value, to: &line)
            }
            line += "]"
        case .dictionary(let values):
            line += "{"
            for (index, key) in values.keys.sorted().enumerated() {
                if index > 0 { line += "," }
                encode(key, to: &line)
                line += ":"
                encode(values[key]!, to: &line)
            }
            line += "}"
        }
    }

    /// A JSON string in ASCII only: every character but printable ASCII is escaped (`\uXXXX`, surrogate pairs beyond
    /// the Basic Multilingual Plane), so no reader can lose a byte order mark or a line separator, and no terminal or
    /// log shipper sees a control character.
    private static func encode(_ text: String, to line: inout String) {
        line += "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: line += "\\\""
            case 0x5C: line += "\\\\"
            case 0x20...0x7E: line.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        line += "\""
    }
}

/// How `restock serve` writes its log: swift-log's text lines, or one JSON object a line (``JSONLogHandler``).
public enum LogFormat: String, CaseIterable, Sendable {
    /// `2026-11-21T19:41:47+0000 info restock.store: key=value message`, as swift-log writes it.
    case text
    /// One JSON object a line.
    case json

    /// A handler for `label` in this format at `level`, on standard error.
    public func handler(label: String, level: Logger.Level) -> any LogHandler {
        var handler: any LogHandler =
            switch self {
            case .text: OneLineLogHandler(StreamLogHandler.standardError(label: label))
            case .json: JSONLogHandler.standardError(label: label)
            }
        handler.logLevel = level
        return handler
    }
}
