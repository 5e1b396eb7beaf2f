import RestockTestSupport
import Testing
@testable import Mosquitto
import LocalBroker

/// The waits between reconnection attempts, without a broker.
@Suite("Reconnect policy")
struct ReconnectPolicyTests {
    @Test("the default tries first 100–200 ms after a loss, then waits longer, never more than 800 ms")
    func defaultDelays() {
        let policy = MQTTReconnectPolicy.default
        for random in [0, 0.25, 0.5, 0.999_999] {
            let first = policy.delay(beforeAttempt: 0, random: random)
            #expect(first > .milliseconds(100) && first <= .milliseconds(200))
            let second = policy.delay(beforeAttempt: 1, random: random)
            #expect(second > .milliseconds(200) && second <= .milliseconds(400))
            for attempt in [2, 3, 10, 1_000, Int.max] {
                let later = policy.delay(beforeAttempt: attempt, random: random)
                #expect(later > .milliseconds(400) && later <= .milliseconds(800), "attempt \(attempt)")
            }
        }
    }

    @Test("jitter spreads the waits; none makes every wait the same")
    func jitter() {
        let spread = MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(1), jitter: 0.5)
        #expect(spread.delay(beforeAttempt: 0, random: 0) == .seconds(1))
        #expect(spread.delay(beforeAttempt: 0, random: 0.5) == .milliseconds(750))
        let fixed = MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(1), jitter: 0)
        #expect(fixed.delay(beforeAttempt: 5, random: 0.9) == .seconds(1))
    }

    @Test("a policy that cannot work is refused before connecting")
    func validation() throws {
        // Never connected to: validation happens before any connection.
        let broker = BrokerAddress.hostname("127.0.0.1", port: try freeLoopbackPort())
        for policy in [
            MQTTReconnectPolicy(initialDelay: .zero), MQTTReconnectPolicy(initialDelay: .seconds(2), maximumDelay: .seconds(1)),
            MQTTReconnectPolicy(jitter: 1.5), MQTTReconnectPolicy(jitter: -0.1),
        ] {
            #expect(throws: MQTTError.self) { try MQTTConfiguration(broker: broker, clientID: "x", reconnect: policy).validate() }
        }
        #expect(throws: Never.self) { try MQTTConfiguration(broker: broker, clientID: "x").validate() }
    }
}

/// Why a connection closed, as the disconnect callback's code says (issue 32: a broker's MQTT 5 DISCONNECT reason read
/// as a libmosquitto error said "Unknown error").
@Suite("Disconnect reasons")
struct DisconnectReasonTests {
    @Test("a broker's MQTT 5 reason code is named as the broker's; libmosquitto's own codes keep their text")
    func reasons() {
        #expect(LibMosquittoLibrary.disconnectReason(0x8E) == "the broker disconnected it: Session taken over (reason code 142)")
        #expect(LibMosquittoLibrary.disconnectReason(0x87) == "the broker disconnected it: Not authorized (reason code 135)")
        #expect(LibMosquittoLibrary.disconnectReason(7) == "The connection was lost.")
    }
}
