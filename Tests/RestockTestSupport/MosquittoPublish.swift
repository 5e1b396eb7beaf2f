import Foundation
import LocalBroker

/// Publishes with the real `mosquitto_pub`, QoS 1 (with `-r` when `retain`).
public func mosquittoPub(_ broker: MosquittoBroker, _ topic: String, _ message: String, retain: Bool = false) async throws {
    let result = try await ChildProcess.run(
        "mosquitto_pub",
        ["-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-t", topic, "-m", message] + (retain ? ["-r"] : []))
    guard result.status == 0 else { throw StoreExited(status: result.status, log: result.standardError) }
}

/// Publishes raw bytes (for invalid UTF-8 and oversize payloads) with `mosquitto_pub -s` from standard input.
public func mosquittoPub(_ broker: MosquittoBroker, _ topic: String, bytes: [UInt8]) async throws {
    let result = try await ChildProcess.run(
        "mosquitto_pub", ["-p", String(broker.port), "-h", "127.0.0.1", "-V", "5", "-q", "1", "-t", topic, "-s"],
        input: Data(bytes))
    guard result.status == 0 else { throw StoreExited(status: result.status, log: result.standardError) }
}
