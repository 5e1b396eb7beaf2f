import CMosquitto

/// `mosquitto_lib_init` runs once per process, the first time a client is made (a global's
/// initializer runs exactly once, thread-safely). `mosquitto_lib_cleanup` is never called: the
/// library lives as long as the process.
enum LibMosquittoLibrary {
    private static let initialized: Bool = {
        mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue
    }()

    static func ensureInitialized() throws(MQTTError) {
        guard initialized else { throw .library(code: -1, message: "mosquitto_lib_init failed") }
    }

    /// libmosquitto's text for one of its error codes.
    static func errorText(_ code: Int32) -> String {
        String(cString: mosquitto_strerror(code))
    }

    /// libmosquitto's text for an MQTT v5 reason code.
    static func reasonText(_ code: Int32) -> String {
        String(cString: mosquitto_reason_string(code))
    }

    /// Why a connection closed, from the code libmosquitto's disconnect callback passes: one of its own error codes
    /// (small numbers: "The connection was lost.", a protocol error), or the reason code of the MQTT 5 DISCONNECT the
    /// broker sent (0x80 and up), named as the broker's: `the broker disconnected it: Session taken over (reason code 142)`.
    static func disconnectReason(_ code: Int32) -> String {
        (0x80...0xFF).contains(code) ? "the broker disconnected it: \(reasonText(code)) (reason code \(code))" : errorText(code)
    }

    /// Whether `topic` matches `filter`, by libmosquitto's own matcher.
    static func topic(_ topic: String, matches filter: String) -> Bool {
        var result = false
        return mosquitto_topic_matches_sub(filter, topic, &result) == MOSQ_ERR_SUCCESS.rawValue && result
    }

    /// The Swift error for a libmosquitto return code.
    static func error(_ code: Int32) -> MQTTError {
        switch code {
        case MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue: .notConnected
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue: .payloadTooLarge(-1)
        default: .library(code: code, message: errorText(code))
        }
    }
}
