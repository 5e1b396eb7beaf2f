/// A valid MQTT topic name, to publish on: 1 to 65,535 bytes of UTF-8, no wildcards (`+`, `#`),
/// no NUL, no control characters. Checked in Swift before anything reaches libmosquitto.
public struct MQTTTopic: Sendable, Hashable, CustomStringConvertible {
    /// The longest topic MQTT allows, in UTF-8 bytes.
    public static let maximumLength = 65_535

    /// The topic as text.
    public let name: String

    /// Validates a topic name.
    /// - Throws: ``MQTTError/invalidTopic(_:reason:)``.
    public init(_ name: String) throws(MQTTError) {
        if let reason = TopicRules.problem(in: name, allowWildcards: false) {
            throw .invalidTopic(name, reason: reason)
        }
        self.name = name
    }

    /// Validates a topic given as raw bytes, refusing invalid UTF-8.
    /// - Throws: ``MQTTError/invalidTopic(_:reason:)``.
    public init(bytes: some Collection<UInt8>) throws(MQTTError) {
        guard let name = String(validating: bytes, as: UTF8.self) else {
            throw .invalidTopic(String(decoding: bytes, as: UTF8.self), reason: "it is not valid UTF-8")
        }
        try self.init(name)
    }

    /// The topic as text.
    public var description: String { name }
}

/// A valid MQTT topic filter, to subscribe with: a topic whose levels may be `+`, and whose last level may be `#`.
public struct MQTTTopicFilter: Sendable, Hashable, CustomStringConvertible {
    /// The filter as text.
    public let filter: String

    /// Validates a topic filter.
    /// - Throws: ``MQTTError/invalidTopicFilter(_:reason:)``.
    public init(_ filter: String) throws(MQTTError) {
        if let reason = TopicRules.problem(in: filter, allowWildcards: true) {
            throw .invalidTopicFilter(filter, reason: reason)
        }
        self.filter = filter
    }

    /// Validates a filter given as raw bytes, refusing invalid UTF-8.
    public init(bytes: some Collection<UInt8>) throws(MQTTError) {
        guard let filter = String(validating: bytes, as: UTF8.self) else {
            throw .invalidTopicFilter(String(decoding: bytes, as: UTF8.self), reason: "it is not valid UTF-8")
        }
        try self.init(filter)
    }

    /// The filter that matches every topic.
    public static let all = MQTTTopicFilter(valid: "#")

    /// A filter known to be valid, unchecked.
    private init(valid filter: String) { self.filter = filter }

    /// Whether `topic` matches this filter, by libmosquitto's own matcher.
    public func matches(_ topic: String) -> Bool {
        LibMosquittoLibrary.topic(topic, matches: filter)
    }

    /// The filter as text.
    public var description: String { filter }
}

/// The checks shared by topic names, filters and client ids.
enum TopicRules {
    /// Why `text` is not a valid topic (or filter), or `nil` when it is.
    static func problem(in text: String, allowWildcards: Bool) -> String? {
        if text.isEmpty { return "it is empty" }
        if text.utf8.count > MQTTTopic.maximumLength { return "it is longer than 65,535 bytes" }
        // One pass over the bytes settles the common case: printable ASCII without wildcards.
        var hasWildcard = false, isPrintableASCII = true
        for byte in text.utf8 {
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "#") {
                hasWildcard = true
            } else if byte < 0x20 || byte >= 0x7F {
                isPrintableASCII = false
            }
        }
        if !isPrintableASCII, let reason = characterProblem(in: text) { return reason }
        guard hasWildcard else { return nil }
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            let hasPlus = level.contains("+"), hasHash = level.contains("#")
            guard hasPlus || hasHash else { continue }
            guard allowWildcards else { return "a topic to publish on cannot contain the wildcards + or #" }
            if hasPlus, level != "+" { return "+ must stand alone as a whole level" }
            if hasHash, level != "#" || index != levels.count - 1 { return "# must stand alone as the last level" }
        }
        return nil
    }

    /// Why `text` holds a character MQTT forbids (NUL, controls, non-characters), or `nil`.
    static func characterProblem(in text: String) -> String? {
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0: return "it contains a NUL character"
            case 0x01...0x1F, 0x7F...0x9F: return "it contains a control character"
            case 0xFFFE, 0xFFFF: return "it contains a Unicode non-character"
            default: continue
            }
        }
        return nil
    }
}
