import Mosquitto
import Testing

@Suite("Validation before anything is sent")
struct ValidationTests {
    @Test(
        "invalid topic names are refused",
        arguments: [
            ("", "empty"), ("a/+/b", "wildcard"), ("a/#", "wildcard"), ("+", "wildcard"), ("a\u{0}b", "NUL"),
            ("tab\there", "control"), (String(repeating: "x", count: 65_536), "long"),
        ])
    func invalidTopics(topic: String, what: String) {
        #expect(throws: MQTTError.self, "\(what)") { try MQTTTopic(topic) }
    }

    @Test("invalid UTF-8 is refused for topics and filters")
    func invalidUTF8() throws {
        let bytes: [UInt8] = [0x61, 0xFF, 0xFE, 0x62]
        #expect(throws: MQTTError.self) { try MQTTTopic(bytes: bytes) }
        #expect(throws: MQTTError.self) { try MQTTTopicFilter(bytes: bytes) }
        #expect(try MQTTTopic(bytes: Array("caf\u{E9}/ok".utf8)).name == "caf\u{E9}/ok")
    }

    @Test(
        "filters: wildcards only as whole levels, # only last",
        arguments: [("a/b+", false), ("a/#/b", false), ("a#", false), ("", false), ("a/+/b", true), ("#", true), ("+/+", true), ("a/b/#", true)])
    func filters(filter: String, valid: Bool) {
        #expect(((try? MQTTTopicFilter(filter)) != nil) == valid, "\(filter)")
    }

    @Test("the matcher is libmosquitto's")
    func matcher() throws {
        #expect(try MQTTTopicFilter("restock/+/customers/#").matches("restock/apple/customers/alice/alerts"))
        #expect(try !MQTTTopicFilter("restock/+/admin").matches("restock/apple/admin/stock"))
        #expect(try !MQTTTopicFilter("#").matches("$SYS/broker/uptime"))
    }

    @Test("client ids: a persistent session needs one; NUL and control characters are refused")
    func clientIDs() throws {
        let broker = BrokerAddress.hostname("127.0.0.1")
        #expect(throws: MQTTError.self) { try MQTTClient(configuration: .init(broker: broker, clientID: "", session: .persistent)) }
        #expect(throws: MQTTError.self) { try MQTTClient(configuration: .init(broker: broker, clientID: "a\u{0}b")) }
        #expect(throws: MQTTError.self) { try MQTTClient(configuration: .init(broker: broker, clientID: "a\nb")) }
        _ = try MQTTClient(configuration: .init(broker: broker, clientID: ""))
    }

    @Test("an invalid topic is refused before the connection is even looked at")
    func refusedBeforeSending() async throws {
        // Not connected: a valid topic fails with notConnected, so an invalid one failing with
        // invalidTopic shows that validation comes first and nothing reaches the network.
        let client = try MQTTClient(configuration: .init(broker: .hostname("127.0.0.1"), clientID: "v"))
        await #expect(throws: MQTTError.notConnected) { try await client.publish("x", to: "ok/topic") }
        for topic in ["", "a/+", "a/#", "a\u{0}"] {
            await #expect(throws: MQTTError.invalidTopic(topic, reason: "")) {
                do { try await client.publish("x", to: topic) } catch MQTTError.invalidTopic(let name, _) {
                    throw MQTTError.invalidTopic(name, reason: "")
                }
            }
        }
        await #expect(throws: MQTTError.self) { try await client.subscribe(to: "a/#/b") }
        await #expect(throws: MQTTError.self) { try await client.unsubscribe(from: "a+") }
        #expect(throws: MQTTError.self) { try client.messages(matching: "#/a") }
    }

    @Test(
        "broker URLs",
        arguments: [
            ("mqtt://127.0.0.1:1884", "mqtt://127.0.0.1:1884"), ("mqtts://broker.example", "mqtts://broker.example:8883"),
            ("mqtt://[::1]:1999", "mqtt://[::1]:1999"), ("mqtt://localhost", "mqtt://localhost:1883"),
        ])
    func urls(url: String, expected: String) throws {
        #expect(try BrokerAddress(url: url).description == expected)
    }

    @Test("bad broker URLs are refused", arguments: ["http://x", "mqtt://", "mqtt://host:0", "mqtt://host:99999", "mqtt://host:abc", "127.0.0.1:1883", "mqtt://::1]:63", "mqtts://a]:b:115", "mqtt://a b:1", "mqtt://a\u{0}b:1", "mqtt://[::1]]:63"])
    func badURLs(url: String) {
        #expect(throws: MQTTError.self) { try BrokerAddress(url: url) }
    }
}
