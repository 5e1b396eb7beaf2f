import Foundation
import RestockTestSupport
import Synchronization
import Deadlines

/// What a subscriber (a `mosquitto_sub` read through ``PipedProcess``) has received: deliveries,
/// distinct message ids, and when a target count of distinct ids was reached.
final class ArrivalLog: Sendable {
    private struct State {
        var deliveries = 0
        var ids = Set<String>()
        var target = Int.max
        var reachedAt: UInt64?
        var last: UInt64 = 0
        /// When each distinct message arrived, in order.
        var times: [UInt64] = []
    }

    private let state = Mutex(State())
    private let identify: @Sendable ([UInt8]) -> String?
    /// Each distinct arrival's time, in order, for waiting on one message at a time.
    let arrivals: AsyncStream<UInt64>
    private let continuation: AsyncStream<UInt64>.Continuation

    /// `identify` names a line's message (an alert id); lines it returns `nil` for are ignored.
    init(identify: @escaping @Sendable ([UInt8]) -> String?) {
        self.identify = identify
        (arrivals, continuation) = AsyncStream.makeStream(of: UInt64.self)
    }

    /// Call with each line the subscriber prints.
    func record(_ line: [UInt8], at time: UInt64) {
        guard let id = identify(line) else { return }
        let isNew = state.withLock { state in
            state.deliveries += 1
            state.last = time
            guard state.ids.insert(id).inserted else { return false }
            state.times.append(time)
            if state.ids.count >= state.target, state.reachedAt == nil { state.reachedAt = time }
            return true
        }
        if isNew { continuation.yield(time) }
    }

    var deliveries: Int { state.withLock { $0.deliveries } }

    /// When the `n`-th distinct message (counting from 1) arrived.
    func arrival(_ n: Int) -> UInt64? { state.withLock { n >= 1 && n <= $0.times.count ? $0.times[n - 1] : nil } }
    var distinct: Int { state.withLock { $0.ids.count } }

    /// Waits until `count` distinct messages have arrived in all, and returns when the last of them did.
    func waitForDistinct(_ count: Int, within seconds: Double, what: String) async throws -> UInt64 {
        state.withLock { state in
            state.target = count
            state.reachedAt = state.ids.count >= count ? state.last : nil
        }
        try await waitUntil(what, within: seconds, pollEvery: .milliseconds(5)) { [self] in
            state.withLock { $0.reachedAt != nil }
        }
        return state.withLock { $0.reachedAt! }
    }

    /// The `"id":"…"` of an alert's JSON, found without decoding the rest.
    @Sendable static func alertID(_ line: [UInt8]) -> String? {
        let marker = Array(#""id":""#.utf8)
        guard line.count > marker.count,
            let start = (0...(line.count - marker.count)).first(where: { line[$0..<($0 + marker.count)].elementsEqual(marker) })
        else { return nil }
        let from = start + marker.count
        guard let end = line[from...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: line[from..<end], as: UTF8.self)
    }
}

/// The wildcard subscriber of B3 and the customer of B4: a real `mosquitto_sub` at QoS 1.
struct Subscriber {
    let process: PipedProcess
    let log: ArrivalLog

    /// Subscribes to `filter`, then waits until a probe published on `probeTopic` (which must match it) comes through.
    init(broker: MosquittoBroker, filter: String, probeTopic: String, identify: @escaping @Sendable ([UInt8]) -> String?) async throws {
        let log = ArrivalLog(identify: identify)
        let box = ProbeFlag()
        process = try PipedProcess(
            "mosquitto_sub", ["-h", "127.0.0.1", "-p", String(broker.port), "-V", "5", "-q", "1", "-t", filter]
        ) { line, time in
            if line.starts(with: Array("probe".utf8)) { box.set() } else { log.record(line, at: time) }
        }
        self.log = log
        try await waitUntil("mosquitto_sub on \(filter) to receive a probe", within: 30, pollEvery: .milliseconds(50)) {
            try await mosquittoPub(broker, probeTopic, "probe")
            return box.isSet
        }
    }
}

private final class ProbeFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}
