import CMosquitto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// MQTT v5 property lists: built for CONNECT and PUBLISH, read from incoming messages.
enum LibMosquittoProperties {
    /// A property list owned by Swift; `mosquitto_property_free_all` runs when it is released.
    /// `@unchecked Sendable`: it is built on one thread and then only read, by one libmosquitto call at a time.
    final class List: @unchecked Sendable {
        var head: OpaquePointer?
        init() {}
        deinit { mosquitto_property_free_all(&head) }
    }

    private static func id(_ property: mqtt5_property) -> Int32 { Int32(property.rawValue) }

    /// CONNECT properties: the session expiry of a persistent v5 session.
    static func connect(for configuration: MQTTConfiguration) -> List {
        let list = List()
        if configuration.protocolVersion == .v5, case .persistent(let expiry) = configuration.session {
            mosquitto_property_add_int32(&list.head, id(MQTT_PROP_SESSION_EXPIRY_INTERVAL), expiry)
        }
        return list
    }

    /// PUBLISH properties.
    static func publish(_ properties: MQTTMessageProperties) -> List {
        let list = List()
        if let contentType = properties.contentType {
            mosquitto_property_add_string(&list.head, id(MQTT_PROP_CONTENT_TYPE), contentType)
        }
        if let responseTopic = properties.responseTopic {
            mosquitto_property_add_string(&list.head, id(MQTT_PROP_RESPONSE_TOPIC), responseTopic)
        }
        if let data = properties.correlationData {
            data.withUnsafeBytes { bytes in
                _ = mosquitto_property_add_binary(
                    &list.head, id(MQTT_PROP_CORRELATION_DATA), bytes.baseAddress, UInt16(clamping: bytes.count))
            }
        }
        if let expiry = properties.messageExpiryInterval {
            mosquitto_property_add_int32(&list.head, id(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL), expiry)
        }
        for property in properties.userProperties {
            mosquitto_property_add_string_pair(&list.head, id(MQTT_PROP_USER_PROPERTY), property.name, property.value)
        }
        return list
    }

    /// Copies the properties this client understands out of an incoming list.
    static func read(_ list: OpaquePointer?) -> MQTTMessageProperties {
        var properties = MQTTMessageProperties()
        guard let list else { return properties }
        properties.contentType = readString(list, MQTT_PROP_CONTENT_TYPE)
        properties.responseTopic = readString(list, MQTT_PROP_RESPONSE_TOPIC)
        var value: UnsafeMutableRawPointer?
        var length: UInt16 = 0
        if mosquitto_property_read_binary(list, id(MQTT_PROP_CORRELATION_DATA), &value, &length, false) != nil,
            let value
        {
            properties.correlationData = Array(UnsafeRawBufferPointer(start: value, count: Int(length)))
            free(value)
        }
        var expiry: UInt32 = 0
        if mosquitto_property_read_int32(list, id(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL), &expiry, false) != nil {
            properties.messageExpiryInterval = expiry
        }
        var name: UnsafeMutablePointer<CChar>?
        var text: UnsafeMutablePointer<CChar>?
        var cursor = mosquitto_property_read_string_pair(list, id(MQTT_PROP_USER_PROPERTY), &name, &text, false)
        while cursor != nil {
            if let name, let text {
                properties.userProperties.append(MQTTUserProperty(name: String(cString: name), value: String(cString: text)))
            }
            free(name)
            free(text)
            name = nil
            text = nil
            cursor = mosquitto_property_read_string_pair(cursor, id(MQTT_PROP_USER_PROPERTY), &name, &text, true)
        }
        return properties
    }

    private static func readString(_ list: OpaquePointer, _ property: mqtt5_property) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard mosquitto_property_read_string(list, id(property), &value, false) != nil, let value else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}
