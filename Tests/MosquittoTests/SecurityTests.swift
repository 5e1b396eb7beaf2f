import Mosquitto
import RestockTestSupport
import Testing

@Suite("Credentials, TLS and ACLs", .timeLimit(.minutes(2)))
struct SecurityTests {
    @Test("a username and password are accepted, a wrong password and anonymity refused")
    func passwords() async throws {
        let broker = try await MosquittoBroker.start(.init(users: ["alice": "s3cret"]))
        let good = try await connectedClient(to: broker, username: "alice", password: "s3cret")
        #expect(good.isConnected)
        await good.disconnect()

        for (username, password) in [("alice", "wrong"), (nil, nil)] as [(String?, String?)] {
            await #expect {
                _ = try await connectedClient(to: broker, username: username, password: password)
            } throws: { error in
                guard case MQTTError.connectionRefused(let code, _) = error else { return false }
                return code == 0x86 || code == 0x87  // bad user name or password, not authorized
            }
        }
    }

    @Test("TLS: accepted with the right CA, refused with a wrong CA or a wrong host name")
    func tls() async throws {
        let broker = try await MosquittoBroker.start(.init(tls: true))
        let certificates = try #require(broker.certificates)
        let port = try #require(broker.tlsPort)
        func client(host: String, caFile: String) throws -> MQTTClient {
            try MQTTClient(
                configuration: .init(
                    broker: .tls(host, port: port), clientID: uniqueName("tls"),
                    tls: MQTTTLSConfiguration(caFile: caFile), connectTimeout: .seconds(10)))
        }
        let good = try client(host: "localhost", caFile: certificates.caFile)
        try await good.connect()
        let topic = uniqueName("secure")
        let messages = try good.messages(matching: topic)
        try await good.subscribe(to: topic)
        try await good.publish("over tls", to: topic)
        #expect(try await first(1, of: messages).first?.payloadString == "over tls")
        await good.disconnect()

        // Both refusals name the certificate problem rather than running into the connect timeout.
        let verifyFailed = MQTTError.connectionFailed("TLS handshake failed: certificate verify failed")
        await #expect(throws: verifyFailed, "wrong CA") {
            try await client(host: "localhost", caFile: certificates.otherCAFile).connect()
        }
        // 127.0.0.1 reaches the same listener, but the certificate names only localhost.
        let wrongName = try MQTTClient(
            configuration: .init(
                broker: .tls("127.0.0.1", port: port), clientID: uniqueName("tls"),
                tls: MQTTTLSConfiguration(caFile: certificates.caFile), connectTimeout: .seconds(3)))
        await #expect(throws: verifyFailed, "wrong host name") { try await wrongName.connect() }
    }

    @Test("under MQTT v5, publishes the ACL forbids are reported as errors, and the client carries on")
    func aclRefusals() async throws {
        let acl = """
            user alice
            topic readwrite alice/#
            topic read public/#
            """
        let broker = try await MosquittoBroker.start(.init(users: ["alice": "pw"], acl: acl))
        let alice = try await connectedClient(to: broker, username: "alice", password: "pw")

        try await alice.publish("mine", to: "alice/notes")
        await #expect {
            try await alice.publish("not mine", to: "bob/notes", qos: .atLeastOnce)
        } throws: { error in
            error as? MQTTError == .publishRefused(topic: "bob/notes", reasonCode: 0x87, reason: "Not authorized")
        }
        // mosquitto 2.0.11 drops the connection after a denied publish (eclipse-mosquitto/mosquitto#2579);
        // the client reconnects by itself.
        try await retryingWhileReconnecting { try await alice.publish("mine again", to: "alice/notes") }
        await #expect {
            try await retryingWhileReconnecting { try await alice.publish("read only", to: "public/news", qos: .exactlyOnce) }
        } throws: { error in
            guard case MQTTError.publishRefused(_, let code, _) = error else { return false }
            return code == 0x87
        }

        await alice.disconnect()
    }

    @Test("under MQTT v5, a subscription the broker refuses is reported as an error and not made again")
    func subscribeRefusal() async throws {
        // mosquitto's ACL file never refuses a SUBSCRIBE (it filters on delivery); its dynamic-security plugin does.
        let security = DynamicSecurity(
            password: "pw", users: ["alice": .init(publish: ["alice/#"], subscribe: ["alice/#", "public/#"])])
        let broker = try await MosquittoBroker.start(.init(dynamicSecurity: security))
        let alice = try await connectedClient(to: broker, username: "alice", password: "pw")
        #expect(try await alice.subscribe(to: "public/#") == .atLeastOnce)
        await #expect {
            try await alice.subscribe(to: "bob/#")
        } throws: { error in
            guard case MQTTError.subscribeRefused(let filter, let code, _) = error else { return false }
            return filter == "bob/#" && code == 0x87
        }
        #expect(alice.subscriptions["bob/#"] == nil, "a refused subscription is not made again on reconnect")
        #expect(alice.subscriptions["public/#"] == .atLeastOnce)
        #expect(alice.isConnected)
        await alice.disconnect()
    }
}
