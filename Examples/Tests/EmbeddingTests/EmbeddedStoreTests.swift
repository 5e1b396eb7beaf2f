import Foundation
import LocalBroker
import Logging
import RestockCore
import RestockMQTT
import ServiceLifecycle
import Synchronization
import Testing

@Test("customers subscribe through the broker; the local list follows, and an in-process observer gets the alert")
func embeddedStore() async throws {
    let broker = try await LocalMosquitto.start()  // a private mosquitto on a free loopback port
    let apple = try StoreID("apple"), alice = try CustomerID("alice"), iphone = try SKU("iphone-15")
    let logger = Logger(label: "restock.store")
    let service = try StoreService(
        configuration: .init(
            connection: try BrokerSettings(url: broker.url), store: apple,
            dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID())")),
        logger: logger)
    let group = ServiceGroup(services: [service], logger: logger)
    let running = Task { try await group.run() }
    try await service.health.waitUntilOnline()

    let store = service.store  // the local observer list: reads and observers, no writes
    let heard = Mutex<[RestockAlert]>([])
    let token = store.observe(alice) { alert in heard.withLock { $0.append(alert) } }

    // Customers subscribe and unsubscribe through the broker, as any MQTT client does.
    try await mosquittoPub(broker, "restock/apple/subscribe/alice", "iphone-15")
    try await mosquittoPub(broker, "restock/apple/subscribe/bob", "iphone-15")
    try await eventually { store.watchers(of: iphone).count == 2 }
    #expect(store.watchers(of: iphone).map(\.customer.rawValue) == ["alice", "bob"])
    try await mosquittoPub(broker, "restock/apple/unsubscribe/bob", "iphone-15")
    try await eventually { store.watchlist(of: try CustomerID("bob")).isEmpty }

    // The admin restocks; the observer hears of it once the store has committed the alert.
    let admin = StoreClient(connection: try BrokerSettings(url: broker.url), topics: try RestockTopics(store: apple))
    try await admin.changeStock(of: iphone, .set(5))
    try await eventually { heard.withLock { $0.count } == 1 }
    #expect(heard.withLock { $0.first?.quantity } == 5)
    #expect(store.quantity(of: iphone) == 5)
    #expect(store.watchers(of: iphone).isEmpty)  // a `once` watch ends with its alert
    token.cancel()

    // A graceful shutdown (SIGTERM in a real program) drains what is queued and says offline.
    await group.triggerGracefulShutdown()
    try await running.value
    #expect(try await admin.status()?.state == .offline)
    try await broker.stop()
}

@Test("cancelling the task that runs the store also says offline")
func cancelledStore() async throws {
    let broker = try await LocalMosquitto.start()
    let apple = try StoreID("apple")
    let service = try StoreService(
        configuration: .init(
            connection: try BrokerSettings(url: broker.url), store: apple,
            dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("restock-\(UUID())")),
        logger: Logger(label: "restock.store"))
    let running = Task { try await service.run() }
    try await service.health.waitUntilOnline()
    running.cancel()
    _ = await running.result
    let status = try await StoreClient(connection: try BrokerSettings(url: broker.url), topics: try RestockTopics(store: apple)).status()
    #expect(status?.state == .offline)
    try await broker.stop()
}

/// Publishes one request with mosquitto_pub, as a customer would, and waits for it to exit.
func mosquittoPub(_ broker: LocalMosquitto, _ topic: String, _ message: String) async throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
    process.arguments = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", topic, "-m", message]
    let status = try await withCheckedThrowingContinuation { (exited: CheckedContinuation<Int32, any Error>) in
        process.terminationHandler = { exited.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { exited.resume(throwing: error) }
    }
    guard status == 0 else { throw ExampleFailure("mosquitto_pub exited with \(status)") }
}

/// Waits until `condition` holds, checking every 10 ms, for at most `seconds`: the local list follows a request
/// once the store has committed it, a few milliseconds after the broker took it.
func eventually(within seconds: Double = 10, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw ExampleFailure("not within \(seconds) s") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

struct ExampleFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
