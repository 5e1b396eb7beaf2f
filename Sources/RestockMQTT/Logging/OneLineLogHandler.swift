import Logging
import RestockPipeline

/// swift-log's text handler (`restock serve --log-format text`), each entry kept on its one line: a character of the
/// message or of a metadata value that does not show as itself (a newline, a terminal's escape, a bidirectional
/// override) is written escaped, as `\n` or `\u{1B}` (``StoredValues/escaped(_:)``). A path given on the command line
/// or a value read from the state may hold anything (found by an outside trial: `--data $'/tmp/s\nnl'` split the
/// store's log lines in two, and an escape sequence reached the terminal).
struct OneLineLogHandler: LogHandler {
    private var text: StreamLogHandler

    init(_ text: StreamLogHandler) { self.text = text }

    var logLevel: Logger.Level {
        get { text.logLevel }
        set { text.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { text.metadata }
        set { text.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { text.metadataProvider }
        set { text.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { text[metadataKey: key] }
        set { text[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(StoredValues.escaped("\(event.message)"))"
        event.metadata = event.metadata?.mapValues(Self.escaped)
        text.log(event: event)
    }

    /// `value` with every string in it escaped.
    private static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(StoredValues.escaped(text))
        case .stringConvertible(let text): .string(StoredValues.escaped(text.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
