/// How the broker treats a subscription (MQTT v5 subscription options; a 3.1.1 connection sends none).
public struct MQTTSubscriptionOptions: Sendable, Hashable {
    /// When the broker sends the retained messages that match the filter.
    public enum RetainHandling: Sendable, Hashable {
        /// At every SUBSCRIBE, including the ones made again after a reconnect (the MQTT default).
        case sendAtSubscribe
        /// Only when the subscription did not exist yet.
        case sendIfNew
        /// Never: only messages published from now on.
        case doNotSend
    }

    /// When retained messages are sent.
    public var retainHandling: RetainHandling
    /// Whether a message keeps the retain flag it was published with. Without it (the default) the broker
    /// clears the flag on messages it forwards live, so only retained messages sent at subscribe time have it.
    public var retainAsPublished: Bool

    /// The MQTT defaults: retained messages at every subscribe, the retain flag cleared on live messages.
    public init(retainHandling: RetainHandling = .sendAtSubscribe, retainAsPublished: Bool = false) {
        self.retainHandling = retainHandling
        self.retainAsPublished = retainAsPublished
    }

    /// The options byte of libmosquitto's `mosquitto_subscribe_v5` (without the QoS bits).
    var libMosquittoValue: Int32 {
        let handling: Int32 =
            switch retainHandling {
            case .sendAtSubscribe: 0x00  // MQTT_SUB_OPT_SEND_RETAIN_ALWAYS
            case .sendIfNew: 0x10  // MQTT_SUB_OPT_SEND_RETAIN_NEW
            case .doNotSend: 0x20  // MQTT_SUB_OPT_SEND_RETAIN_NEVER
            }
        return handling | (retainAsPublished ? 0x08 : 0)  // MQTT_SUB_OPT_RETAIN_AS_PUBLISHED
    }
}
