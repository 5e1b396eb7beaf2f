/// MQTT quality of service.
public enum MQTTQoS: Int32, Sendable, Comparable, CaseIterable {
    /// At most once: fire and forget.
    case atMostOnce = 0
    /// At least once: acknowledged by PUBACK; may be redelivered.
    case atLeastOnce = 1
    /// Exactly once: the four-step handshake.
    case exactlyOnce = 2

    /// Orders by the guarantee: at most once, at least once, exactly once.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
