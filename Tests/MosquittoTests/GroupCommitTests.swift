import Deadlines
import RestockTestSupport
@testable import Mosquitto
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The network thread hands the journal the messages of one read phase as one batch, before any of their
/// acknowledgements is written: a journal may commit a burst in one transaction, and a refusal keeps the whole batch
/// on the broker.
@Suite("Group commit", .timeLimit(.minutes(3)))
struct GroupCommitTests {
    @Test("a burst reaches a batch journal in order, in batches; a refusal keeps its whole batch unacknowledged")
    func refusalKeepsTheBatch() async throws {
        let (broker, id, _) = try await queued(400)
        let journal = SlowJournal(batching: true, cost: .zero, refuseAt: 250)
        let client = try journaledClient(id, of: broker, journal: journal)
        let events = client.connectionEvents()
        try await client.connect()
        try await waitUntil("the refusal") { journal.refused }
        try await withDeadline(10, waitingFor: "the connection dropped") {
            for await event in events { if case .connectionLost = event { return } }
        }
        let (firstPass, batches) = journal.snapshot
        let refusedBatch = try #require(batches.last { $0.lowerBound <= 250 })
        #expect(firstPass == Array(0..<250), "recorded up to the refused message, in order")
        #expect(batches.count < firstPass.count, "messages came in batches: \(batches.map(\.count))")
        try await ContinuousClock().sleep(for: .milliseconds(300))
        #expect(!client.isConnected, "it waits for the owner's permission")

        journal.resume()
        client.allowReconnect()
        try await waitUntil("every message journaled", within: 20) { journal.snapshot.recorded.last == 399 }
        // The broker delivered again from the first message of the refused batch: none of the batch's PUBACKs was
        // written, and those of the batches before reached it (refusalKeepsEarlierAcknowledgements).
        let again = Array(journal.snapshot.recorded.dropFirst(firstPass.count))
        let from = try #require(again.first)
        #expect(from == refusedBatch.lowerBound, "redelivered from \(from); the refused batch was \(refusedBatch)")
        #expect(again == Array(from..<400))
        await client.disconnect()
    }

    @Test(
        "a batch refused while the broker sends on keeps the batches before it acknowledged: the broker delivers again from the refused batch, never before (found by an outside trial: requests applied twice after a PostgreSQL restart)",
        arguments: 1...4)
    func refusalKeepsEarlierAcknowledgements(round: Int) async throws {
        let count = 3_000
        let (broker, id, _) = try await queuedWithoutInflightLimit(count)
        // The broker is frozen while a batch of the burst in full flow is journaled, so that its acknowledgements reach
        // it unread, and woken once the next one, already in the kernel here, is refused: it then has more of the burst
        // to write before it reads them.
        let journal = SlowJournal(batching: true, cost: .zero, freezing: broker)
        let client = try journaledClient(id, of: broker, journal: journal)
        try await client.connect()
        // A batch that took all the kernel held leaves nothing to refuse while the broker is frozen: then it is woken,
        // and frozen again at a later batch.
        var attempts = 0
        while (try? await waitUntil("the refusal", within: 1, pollEvery: .milliseconds(1)) { journal.refused }) == nil {
            attempts += 1
            try #require(attempts < 10, "no batch after a freeze in \(attempts) tries")
            journal.freezeAgain()
            broker.send(SIGCONT)
        }
        broker.send(SIGCONT)
        try await waitUntil("the connection dropped") { !client.isConnected }
        let (firstPass, batches) = journal.snapshot
        journal.resume()
        client.allowReconnect()
        try await waitUntil("every message journaled", within: 30) { Set(journal.snapshot.recorded).count == count }
        let refusedNumber = try #require(journal.refusedBatch)
        let refusedBatch = try #require(batches.dropFirst(Int(refusedNumber) - 1).first)
        let again = Array(journal.snapshot.recorded.dropFirst(firstPass.count))
        #expect(firstPass == Array(0..<refusedBatch.lowerBound), "recorded whole up to the refused batch \(refusedBatch)")
        #expect(again.first == refusedBatch.lowerBound, "redelivered from \(again.first ?? -1); the refused batch was \(refusedBatch)")
        let recorded = journal.snapshot.recorded, twice = recorded.count - Set(recorded).count
        #expect(twice == 0, "\(twice) messages journaled twice")
        #expect(again == Array(refusedBatch.lowerBound..<count), "the rest once each, in order")
        await client.disconnect()
    }

    @Test(
        "a client that disconnects while the broker sends on has every acknowledgement it wrote read: the next connection of its session gets what it did not journal, and nothing it did",
        arguments: 1...8)
    func disconnectKeepsAcknowledgements(round: Int) async throws {
        let count = 10_000
        let (broker, id, _) = try await queuedWithoutInflightLimit(count)
        let journal = SlowJournal(batching: true, cost: .zero)
        let client = try journaledClient(id, of: broker, journal: journal)
        try await client.connect()
        try await waitUntil("a part of the burst journaled", pollEvery: .milliseconds(1)) { journal.snapshot.recorded.count >= 300 }
        await client.disconnect()
        let firstPass = journal.snapshot.recorded
        try #require(firstPass.count < count, "the burst was journaled whole before the disconnect")
        let next = SlowJournal(batching: true, cost: .zero)
        let again = try journaledClient(id, of: broker, journal: next)
        try await again.connect()
        do {
            try await waitUntil("the rest journaled", within: 30) { next.snapshot.recorded.last == count - 1 }
        } catch {
            let rest = next.snapshot.recorded
            Issue.record("journaled first \(firstPass.count) (up to \(firstPass.last ?? -1)), then \(rest.count): \(rest.prefix(3))…\(rest.suffix(3)), missing \(Set(0..<count).subtracting(firstPass).subtracting(rest).sorted().prefix(10))")
            throw error
        }
        let rest = next.snapshot.recorded
        #expect(firstPass == Array(0..<firstPass.count))
        #expect(rest.first == firstPass.count, "delivered again from \(rest.first ?? -1); \(firstPass.count) were journaled and acknowledged")
        await again.disconnect()
    }

    @Test("throughput of a queued QoS 1 burst, journaled by a journal that costs 100 µs per call: per message vs per batch")
    func throughput() async throws {
        let count = 5_000
        var rates: [Bool: Double] = [:]
        for batching in [false, true] {
            let (broker, id, _) = try await queued(count)
            let journal = SlowJournal(batching: batching, cost: .microseconds(100))
            let client = try journaledClient(id, of: broker, journal: journal)
            let clock = ContinuousClock()
            let start = clock.now
            try await client.connect()
            try await waitUntil("\(count) messages journaled", within: 60, pollEvery: .milliseconds(5)) {
                journal.snapshot.recorded.count >= count
            }
            let elapsed = clock.now - start
            rates[batching] = Double(count) / elapsed.seconds
            let (recorded, batches) = journal.snapshot
            #expect(recorded == Array(0..<count))
            let sizes = batches.map(\.count)
            print("group commit: \(batching ? "per batch  " : "per message"): \(Int(rates[batching]!)) messages/s, "
                + "\(batches.count) journal batches (largest \(sizes.max() ?? 0), mean \(String(format: "%.1f", Double(count) / Double(batches.count))))")
            await client.disconnect()
        }
    }

    @Test("over TLS, a queued burst of large messages is journaled whole and in order (bytes OpenSSL holds are read too)")
    func tls() async throws {
        let count = 2_000
        let (broker, id, _) = try await queued(count, tls: true, padding: 3_000)
        let certificates = try #require(broker.certificates)
        let journal = SlowJournal(batching: true, cost: .zero)
        let client = try MQTTClient(
            configuration: .init(
                broker: .tls("localhost", port: try #require(broker.tlsPort)), clientID: id, session: .persistent,
                tls: MQTTTLSConfiguration(caFile: certificates.caFile)),
            journal: journal)
        #expect(LibMosquittoTLS.isAvailable, "the loop sees the bytes OpenSSL holds")
        try await client.connect()
        try await waitUntil("\(count) messages journaled", within: 30) { journal.snapshot.recorded.count >= count }
        #expect(journal.snapshot.recorded == Array(0..<count))
        await client.disconnect()
    }

    /// A client of `broker` on the persistent session `id`, with `journal`.
    private func journaledClient(_ id: String, of broker: MosquittoBroker, journal: some MQTTInboundJournal) throws -> MQTTClient {
        try MQTTClient(configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent), journal: journal)
    }

    /// ``queued(_:tls:padding:extraConfiguration:)`` of 200-byte messages, on a broker that sends all of them at once (no
    /// limit on the messages in flight): it is busy writing the burst while the client reads it.
    private func queuedWithoutInflightLimit(_ count: Int) async throws -> (MosquittoBroker, String, String) {
        try await queued(count, padding: 200, extraConfiguration: "max_inflight_messages 0")
    }

    /// A broker, and a persistent session subscribed to a topic with `count` QoS 1 messages queued for it (each its
    /// number, then `padding` spaces).
    private func queued(
        _ count: Int, tls: Bool = false, padding: Int = 0, extraConfiguration: String = ""
    ) async throws -> (MosquittoBroker, String, String) {
        let broker = try await MosquittoBroker.start(.init(tls: tls, extraConfiguration: "max_queued_messages 100000\n" + extraConfiguration))
        let id = uniqueName("journaled"), topic = uniqueName("burst")
        let subscriber = try await connectedClient(to: broker, clientID: id, session: .persistent)
        try await subscriber.subscribe(to: topic, qos: .atLeastOnce)
        await subscriber.disconnect()
        let publisher = try await connectedClient(to: broker)
        try await publisher.sendAll(0..<count, window: count) {
            try $0.send(Array(String($1).utf8) + Array(repeating: 0x20, count: padding), to: topic, qos: .atLeastOnce)
        }
        await publisher.disconnect()
        return (broker, id, topic)
    }
}

/// A journal whose every call costs `cost` (as a commit would), recording message numbers (the payloads); with
/// `batching` it commits a batch in one call, without it one message at a time. It refuses
/// message `refuseAt` and every one after it, or batch number `refuseBatch` whole (as the store's journal refuses) and
/// every one after it, until resumed. `freezing` a broker, it freezes it (SIGSTOP) while it journals the first batch
/// after the first with 100 messages or more, and refuses the batch after that one whole.
private final class SlowJournal: MQTTInboundJournal {
    private struct State {
        var recorded: [Int] = []
        var batches: [Range<Int>] = []
        var refusing = false
        var refusedOnce = false
        var refuseBatch: UInt64?
    }

    let batching: Bool
    let cost: Duration
    let refuseAt: Int?
    let freezing: MosquittoBroker?
    private let state: Mutex<State>

    init(batching: Bool, cost: Duration, refuseAt: Int? = nil, refuseBatch: UInt64? = nil, freezing: MosquittoBroker? = nil) {
        self.batching = batching
        self.cost = cost
        self.refuseAt = refuseAt
        self.freezing = freezing
        var state = State()
        state.refuseBatch = refuseBatch
        self.state = Mutex(state)
    }

    /// Forgets the freeze that found no batch after it: the next batch of 100 messages or more freezes the broker again.
    func freezeAgain() { state.withLock { if !$0.refusedOnce { $0.refuseBatch = nil } } }

    /// The batch refused whole, once known.
    var refusedBatch: UInt64? { state.withLock { $0.refuseBatch } }

    var snapshot: (recorded: [Int], batches: [Range<Int>]) { state.withLock { ($0.recorded, $0.batches) } }
    var refused: Bool { state.withLock { $0.refusedOnce } }
    func resume() { state.withLock { $0.refusing = false } }

    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        guard batching else { return messages.flatMap { record(batch: [$0]) } }
        if let freezing, number >= 2, messages.count >= 100, state.withLock({ $0.refuseBatch == nil }) {
            freezing.send(SIGSTOP)
            state.withLock { $0.refuseBatch = number + 1 }
        }
        return record(batch: messages, refusingWhole: number == state.withLock { $0.refuseBatch })
    }

    private func record(batch messages: [MQTTMessage], refusingWhole: Bool = false) -> [MQTTInboundDisposition] {
        if cost > .zero { usleep(UInt32(cost.seconds * 1_000_000)) }
        let numbers = messages.map { Int($0.payloadString?.trimmingSuffix(" ") ?? "") ?? -1 }
        return state.withLock { state in
            if let first = numbers.first { state.batches.append(first..<first + numbers.count) }
            if refusingWhole, !state.refusedOnce {
                state.refusing = true
                state.refusedOnce = true
            }
            return numbers.map { number in
                if number == refuseAt, !state.refusedOnce {
                    state.refusing = true
                    state.refusedOnce = true
                }
                guard !state.refusing else { return .refused }
                state.recorded.append(number)
                return .recorded
            }
        }
    }
}

extension String {
    /// Without the trailing `character`s.
    fileprivate func trimmingSuffix(_ character: Character) -> String {
        String(self[..<(lastIndex { $0 != character }.map { index(after: $0) } ?? startIndex)])
    }
}
