import Mosquitto
import RestockTestSupport
import Testing

@Suite("Round trips through a real mosquitto", .timeLimit(.minutes(2)))
struct RoundTripTests {
    @Test("publish and receive at each QoS", arguments: MQTTQoS.allCases)
    func roundTrip(qos: MQTTQoS) async throws {
        let broker = try await MosquittoBroker.start()
        let client = try await connectedClient(to: broker)
        let topic = uniqueName("rt") + "/q\(qos.rawValue)"
        let messages = try client.messages(matching: topic)
        #expect(try await client.subscribe(to: topic, qos: qos) == qos)
        let properties = MQTTMessageProperties(
            contentType: "application/json", userProperties: [MQTTUserProperty(name: "k", value: "v")])
        try await client.publish(Array(#"{"n":1}"#.utf8), to: topic, qos: qos, properties: properties)
        let received = try await first(1, of: messages)
        #expect(received.first?.payloadString == #"{"n":1}"#)
        #expect(received.first?.qos == qos && received.first?.retain == false)
        #expect(received.first?.properties.contentType == "application/json")
        #expect(received.first?.properties.userProperties == [MQTTUserProperty(name: "k", value: "v")])
        await client.disconnect()
    }

    @Test("works over MQTT 3.1.1 too")
    func v311() async throws {
        let broker = try await MosquittoBroker.start()
        let client = try await connectedClient(to: broker, protocolVersion: .v311)
        let topic = uniqueName("v3")
        let messages = try client.messages(matching: topic)
        try await client.subscribe(to: topic)
        try await client.publish("hello", to: topic)
        #expect(try await first(1, of: messages).first?.payloadString == "hello")
        await client.disconnect()
    }

    @Test("a retained message reaches a later subscriber, and an empty retained payload clears it")
    func retained() async throws {
        let broker = try await MosquittoBroker.start()
        let publisher = try await connectedClient(to: broker)
        let topic = uniqueName("retained")
        try await publisher.publish("kept", to: topic, retain: true)

        let reader = try await connectedClient(to: broker)
        let messages = try reader.messages(matching: topic)
        try await reader.subscribe(to: topic)
        let received = try await first(1, of: messages)
        #expect(received.first?.payloadString == "kept" && received.first?.retain == true)

        try await publisher.publish([], to: topic, retain: true)
        // The live delivery of the clearing message; a new subscriber then gets nothing retained,
        // which the sentinel published after shows: it is the first message that subscriber sees.
        _ = try await first(1, of: messages)
        let late = try await connectedClient(to: broker)
        let lateMessages = try late.messages(matching: "\(topic)/#")
        try await late.subscribe(to: "\(topic)/#")
        try await publisher.publish("sentinel", to: "\(topic)/sentinel")
        #expect(try await first(1, of: lateMessages).first?.payloadString == "sentinel")
        for client in [publisher, reader, late] { await client.disconnect() }
    }

    @Test("messages are routed to the streams whose filter matches")
    func filtering() async throws {
        let broker = try await MosquittoBroker.start()
        let client = try await connectedClient(to: broker)
        let root = uniqueName("route")
        let alerts = try client.messages(matching: "\(root)/+/alerts")
        let everything = try client.messages(matching: "\(root)/#")
        try await client.subscribe(to: "\(root)/#")
        try await client.publish("a", to: "\(root)/alice/alerts")
        try await client.publish("b", to: "\(root)/alice/errors")
        try await client.publish("c", to: "\(root)/bob/alerts")
        #expect(try await first(2, of: alerts).map(\.payloadString) == ["a", "c"])
        #expect(try await first(3, of: everything).map(\.payloadString) == ["a", "b", "c"])
        await client.disconnect()
    }
}
