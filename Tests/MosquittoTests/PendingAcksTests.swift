import RestockTestSupport
import Synchronization
import Testing
@testable import Mosquitto

/// The table of operations waiting for the broker, without a broker: the orders in which an
/// acknowledgement, its waiter and a cancellation can meet.
@Suite("Pending acknowledgements")
struct PendingAcksTests {
    @Test("an acknowledgement that comes before its waiter is kept for it")
    func early() async throws {
        let table = Table()
        table.complete(7, with: .success(1))
        let value = try await table.wait(for: 7)
        #expect(value == 1)
    }

    @Test("a waiter registered first is resumed by the acknowledgement")
    func waiterFirst() async throws {
        let table = Table()
        let value = Task { try await table.wait(for: 3) }
        try await waitUntil("the waiter to register") { table.isWaiting(3) }
        table.complete(3, with: .failure(.notConnected))
        await #expect(throws: MQTTError.notConnected) { try await value.value }
    }

    @Test("cancelled before the waiter came: the waiter ends at once, and the late acknowledgement is dropped")
    func cancelledFirst() async throws {
        let table = Table()
        table.abandon(9)
        // Observed from outside with a deadline: a waiter that was never resumed cannot be cancelled.
        let outcome = Synchronization.Mutex<String?>(nil)
        Task {
            do {
                _ = try await table.wait(for: 9)
                outcome.withLock { $0 = "acknowledged" }
            } catch is CancellationError {
                outcome.withLock { $0 = "cancelled" }
            }
        }
        try await waitUntil("the cancelled waiter to end", within: 5) { outcome.withLock { $0 } != nil }
        #expect(outcome.withLock { $0 } == "cancelled")
        table.complete(9, with: .success(5))
        #expect(!table.isWaiting(9))
        // Dropping it cleared the mark: a later operation that gets id 9 again waits for its own answer.
        let value = Task { try await table.wait(for: 9) }
        try await waitUntil("the new waiter to register") { table.isWaiting(9) }
        table.complete(9, with: .success(6))
        #expect(try await value.value == 6)
    }

    @Test("cancelled after the acknowledgement came but before the waiter: the waiter gets the result")
    func acknowledgedThenCancelled() async throws {
        let table = Table()
        table.complete(4, with: .success(8))
        table.abandon(4)
        let outcome = Synchronization.Mutex<Int?>(nil)
        Task {
            let value = (try? await table.wait(for: 4)) ?? -1
            outcome.withLock { $0 = value }
        }
        try await waitUntil("the waiter to end", within: 5) { outcome.withLock { $0 } != nil }
        #expect(outcome.withLock { $0 } == 8)
    }

    @Test("a lost connection fails the waiters that will never be answered, and only those")
    func disconnect() async throws {
        let table = Table()
        let failing = Task { try await table.wait(for: 1, failsOnDisconnect: true) }
        let kept = Task { try await table.wait(for: 2, failsOnDisconnect: false) }
        try await waitUntil("both waiters to register") { table.isWaiting(1) && table.isWaiting(2) }
        table.failOnDisconnect()
        await #expect(throws: MQTTError.notConnected) { try await failing.value }
        #expect(table.isWaiting(2))
        table.complete(2, with: .success(4))
        #expect(try await kept.value == 4)
    }
}

/// A `LibMosquittoPendingAcks` behind a lock, used the way the client uses it.
private final class Table: Sendable {
    private let acks = Synchronization.Mutex(LibMosquittoPendingAcks<Int>())

    func wait(for mid: Int32, failsOnDisconnect: Bool = false) async throws -> Int {
        try await withCheckedThrowingContinuation { waiter in
            switch acks.withLock({ $0.wait(for: mid, with: waiter, failsOnDisconnect: failsOnDisconnect) }) {
            case .waiting: break
            case .acknowledged(let result): waiter.resume(with: result.mapError { $0 as any Error })
            case .cancelled: waiter.resume(throwing: CancellationError())
            }
        }
    }

    func complete(_ mid: Int32, with result: Result<Int, MQTTError>) {
        acks.withLock { $0.complete(mid, with: result) }?.resume(with: result.mapError { $0 as any Error })
    }

    func abandon(_ mid: Int32) {
        acks.withLock { $0.abandon(mid) }?.resume(throwing: CancellationError())
    }

    func isWaiting(_ mid: Int32) -> Bool { acks.withLock { $0.isWaiting(mid) } }

    func failOnDisconnect() {
        for waiter in acks.withLock({ $0.takeFailingOnDisconnect() }) { waiter.resume(throwing: MQTTError.notConnected) }
    }
}
