import Foundation
import Mosquitto
import RestockTestSupport
import Testing

@Suite("Many short connections", .timeLimit(.minutes(2)))
struct ConnectStormTests {
    /// libmosquitto's loop watches its sockets with select, which cannot watch a descriptor past 1,024: a client
    /// that kept its sockets after it was done would, in a process making many connections (2,000 customers
    /// coming back, 50 at a time), leave later clients unable to hear their CONNACK.
    @Test("2,000 clients, 50 at a time, each connecting and disconnecting: all get in (none keeps its sockets after it is done)")
    func manyShortConnections() async throws {
        let broker = try await MosquittoBroker.start()
        let failures = try await withThrowingTaskGroup(of: String?.self) { group in
            var failures: [String] = []
            for index in 0..<2_000 {
                if index >= 50, let result = try await group.next(), let result { failures.append(result) }
                group.addTask {
                    // Each client is tried twice at most: on a machine loaded by a whole CI run the broker once closed one
                    // connection of 2,000 before its CONNACK (client 400, in local CI beside an outside trial), which a
                    // client connecting again gets past. Sockets kept past 1,024 fail every client after them, twice.
                    var failures: [String] = []
                    for attempt in 1...2 {
                        let client = try MQTTClient(
                            configuration: .init(
                                broker: try BrokerAddress(url: broker.url), clientID: "short-\(index)-\(attempt)", connectTimeout: .seconds(5)))
                        do {
                            try await client.connect()
                            await client.disconnect()
                            return nil
                        } catch {
                            failures.append("\(error)")
                        }
                    }
                    return "\(index): \(failures.joined(separator: "; then "))"
                }
            }
            for try await result in group { if let result { failures.append(result) } }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(3))")
    }
}
