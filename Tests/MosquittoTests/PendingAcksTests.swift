import RestockTestSupport
import Synchronization
import Testing
@testable import Mosquitto
import Deadlines
import SeededRandom

/// The table of operations waiting for the broker, without a broker: each has one owner from the moment its
/// message id is assigned until its own acknowledgement, a lost connection that libmosquitto forgets it at,
/// or the client's shutdown; an acknowledgement nobody owns is dropped.
@Suite("Pending acknowledgements")
struct PendingAcksTests {
    @Test("an acknowledgement nobody owns is dropped: a later owner of the same id waits for its own")
    func staleAcknowledgementIsDropped() async throws {
        let table = Table()
        #expect(table.complete(7, with: .success(1)) == false, "nobody owns 7")
        let owner = table.register(7)
        #expect(owner.result == nil, "the stale acknowledgement was not kept for the new owner")
        let value = Task { try await owner.value() }
        #expect(table.complete(7, with: .success(2)))
        #expect(try await value.value == 2)
    }

    @Test("a waiter is resumed by its acknowledgement; one that comes before the wait is kept by the owner")
    func waiterAndAcknowledgement() async throws {
        let table = Table()
        let first = table.register(3)
        let waiting = Task { try await first.value() }
        try await waitUntil("the waiter to wait") { first.isWaiting }
        table.complete(3, with: .failure(.notConnected))
        await #expect(throws: MQTTError.notConnected) { try await waiting.value }

        let second = table.register(4)
        table.complete(4, with: .success(8))
        #expect(try await second.value() == 8)
    }

    @Test("a cancelled wait ends at once; the acknowledgement still reaches the owner, and no one else")
    func cancelled() async throws {
        let table = Table()
        let owner = table.register(9)
        let waiting = Task { try await owner.value() }
        try await waitUntil("the waiter to wait") { owner.isWaiting }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(table.count == 1, "still owned")
        table.complete(9, with: .success(5))
        #expect(try await owner.value() == 5)
        #expect(table.count == 0)
    }

    @Test("a lost connection ends the owners libmosquitto forgets (QoS 0, subscribes), and only those")
    func disconnect() async throws {
        let table = Table()
        let forgotten = table.register(1, failsOnDisconnect: true)
        let resent = table.register(2, failsOnDisconnect: false)
        table.connectionLost()
        #expect(forgotten.result == .failure(.notConnected))
        #expect(resent.result == nil)
        table.complete(1, with: .success(3))  // cannot happen, but must reach no one
        table.complete(2, with: .success(4))
        #expect(try await resent.value() == 4)
        #expect(forgotten.result == .failure(.notConnected))
    }

    /// libmosquitto's ids as `mosquitto__mid_generate` makes them: 1 to 65,535, then 1 again.
    private struct MidGenerator {
        var last: Int32 = 0
        mutating func next() -> Int32 {
            last = last == 65_535 ? 1 : last + 1
            return last
        }
    }

    @Test("through disconnects, shutdowns and 200,000 ids (three wraps), every owner gets its own acknowledgement or a failure, never another's")
    func wrappingIds() async throws {
        let table = Table()
        var mids = MidGenerator()
        var random = SplitMix64(seed: 12)
        // What the simulated libmosquitto and broker hold: mid → the serial of the message, acknowledged later,
        // in any order. Kept across lost connections (QoS 1 is resent) and across a shutdown (libmosquitto keeps
        // its queue when the client disconnects), when nobody owns them any more.
        var inFlight: [Int32: Int] = [:]
        var owners: [(serial: Int, owner: LibMosquittoAckTicket<Int>)] = []
        var acknowledged = 0, failed = 0, stale = 0
        func acknowledgeSome(_ count: Int) {
            for _ in 0..<count {
                guard let (mid, serial) = inFlight.randomElement(using: &random) else { return }
                inFlight[mid] = nil
                if !table.complete(mid, with: .success(serial)) { stale += 1 }
            }
        }
        for serial in 0..<200_000 {
            let mid = mids.next()
            if inFlight[mid] != nil {
                // libmosquitto would reuse an id still in flight only with 65,535 outstanding; answer it first.
                inFlight[mid] = nil
                if !table.complete(mid, with: .success(-1)) { stale += 1 }
            }
            inFlight[mid] = serial
            owners.append((serial, table.register(mid)))
            switch random.next() % 1_000 {
            case 0..<3: table.connectionLost()  // QoS 1: owners stay, messages are resent
            case 3..<5:
                table.shutDown()  // disconnect(): owners fail; libmosquitto still acknowledges the messages later
            default: break
            }
            acknowledgeSome(Int(random.next() % 3))
        }
        acknowledgeSome(inFlight.count)
        for (serial, owner) in owners {
            switch owner.result {
            case .success(let value)?:
                #expect(value == serial, "message \(serial) took the acknowledgement of message \(value)")
                acknowledged += 1
            case .failure(let error)?:
                #expect(error == .notConnected)
                failed += 1
            case nil:
                Issue.record("message \(serial) was never answered")
            }
        }
        #expect(table.count == 0)
        #expect(stale > 0, "the run had stale acknowledgements to drop")
        #expect(acknowledged > 100_000 && failed > 0)
    }
}

/// A `LibMosquittoPendingAcks` behind a lock, used the way the context uses it.
private final class Table: Sendable {
    private let acks = Synchronization.Mutex(LibMosquittoPendingAcks<Int>())

    func register(_ mid: Int32, failsOnDisconnect: Bool = false) -> LibMosquittoAckTicket<Int> {
        let (owner, displaced) = acks.withLock { $0.register(mid, failsOnDisconnect: failsOnDisconnect) }
        displaced?.finish(.failure(.notConnected))
        return owner
    }

    /// Returns whether someone owned `mid`.
    @discardableResult
    func complete(_ mid: Int32, with result: Result<Int, MQTTError>) -> Bool {
        guard let owner = acks.withLock({ $0.complete(mid) }) else { return false }
        owner.finish(result)
        return true
    }

    func connectionLost() {
        for owner in acks.withLock({ $0.takeFailingOnDisconnect() }) { owner.finish(.failure(.notConnected)) }
    }

    func shutDown() {
        for owner in acks.withLock({ $0.takeAll() }) { owner.finish(.failure(.notConnected)) }
    }

    var count: Int { acks.withLock { $0.count } }
}
