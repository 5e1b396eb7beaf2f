import Mosquitto
import Testing

/// What a configuration's user name and password may be (MQTT 5, 3.1.2.8–3.1.2.9: a UTF-8 string and binary data, each
/// of at most 65,535 bytes), checked before connecting.
@Suite("Credentials")
struct CredentialsTests {
    func configuration(username: String?, password: String?) -> MQTTConfiguration {
        var configuration = MQTTConfiguration(broker: .hostname("127.0.0.1"), clientID: "credentials")
        configuration.username = username
        configuration.password = password
        return configuration
    }

    @Test("a user name or password longer than MQTT carries, or a user name with a control character, is refused before connecting (libmosquitto said 'Invalid function arguments provided', or sent a packet the broker dropped: an outside trial)")
    func refusedBeforeConnecting() throws {
        let long = String(repeating: "x", count: 65_536)
        #expect(throws: MQTTError.invalidConfiguration("the user name is longer than 65,535 bytes, MQTT's limit")) {
            try configuration(username: long, password: nil).validate()
        }
        #expect(throws: MQTTError.invalidConfiguration("the password is longer than 65,535 bytes, MQTT's limit")) {
            try configuration(username: "u", password: long).validate()
        }
        #expect(throws: MQTTError.invalidConfiguration("the user name is not one MQTT takes: it contains a control character")) {
            try configuration(username: "u\n", password: nil).validate()
        }
        // At the limit, and a password of any bytes a string holds, are taken.
        try configuration(username: String(long.dropFirst()), password: String(long.dropFirst()) + "").validate()
        try configuration(username: "ü", password: "\n\t").validate()
    }
}
