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
        let client = try MQTTClient(
            configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent), journal: journal)
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
        // The broker delivered again from the first message of the refused batch or earlier: none of the batch's
        // PUBACKs was written. (Earlier: the PUBACKs of the batch before may still be unread by the broker when the
        // shut socket answers its next bytes with a reset, and mosquitto then drops them with the connection.)
        let again = Array(journal.snapshot.recorded.dropFirst(firstPass.count))
        let from = try #require(again.first)
        #expect(from <= refusedBatch.lowerBound, "redelivered from \(from); the refused batch was \(refusedBatch)")
        #expect(again == Array(from..<400))
        await client.disconnect()
    }

    @Test("throughput of a queued QoS 1 burst, journaled by a journal that costs 100 µs per call: per message vs per batch")
    func throughput() async throws {
        let count = 5_000
        var rates: [Bool: Double] = [:]
        for batching in [false, true] {
            let (broker, id, _) = try await queued(count)
            let journal = SlowJournal(batching: batching, cost: .microseconds(100))
            let client = try MQTTClient(
                configuration: .init(broker: try BrokerAddress(url: broker.url), clientID: id, session: .persistent), journal: journal)
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

    /// A broker, and a persistent session subscribed to a topic with `count` QoS 1 messages queued for it (each its
    /// number, then `padding` spaces).
    private func queued(_ count: Int, tls: Bool = false, padding: Int = 0) async throws -> (MosquittoBroker, String, String) {
        let broker = try await MosquittoBroker.start(.init(tls: tls, extraConfiguration: "max_queued_messages 100000"))
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
/// message `refuseAt` and every one after it, until resumed.
private final class SlowJournal: MQTTInboundJournal {
    private struct State {
        var recorded: [Int] = []
        var batches: [Range<Int>] = []
        var refusing = false
        var refusedOnce = false
    }

    let batching: Bool
    let cost: Duration
    let refuseAt: Int?
    private let state = Mutex(State())

    init(batching: Bool, cost: Duration, refuseAt: Int? = nil) {
        self.batching = batching
        self.cost = cost
        self.refuseAt = refuseAt
    }

    var snapshot: (recorded: [Int], batches: [Range<Int>]) { state.withLock { ($0.recorded, $0.batches) } }
    var refused: Bool { state.withLock { $0.refusedOnce } }
    func resume() { state.withLock { $0.refusing = false } }

    func record(batch messages: [MQTTMessage], number: UInt64) -> [MQTTInboundDisposition] {
        guard batching else { return messages.flatMap { record(batch: [$0]) } }
        return record(batch: messages)
    }

    private func record(batch messages: [MQTTMessage]) -> [MQTTInboundDisposition] {
        if cost > .zero { usleep(UInt32(cost.seconds * 1_000_000)) }
        let numbers = messages.map { Int($0.payloadString?.trimmingSuffix(" ") ?? "") ?? -1 }
        return state.withLock { state in
            if let first = numbers.first { state.batches.append(first..<first + numbers.count) }
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
