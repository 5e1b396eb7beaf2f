import RestockPipeline
import Foundation
import LocalBroker
import RestockCore
import RestockMQTT
import RestockTestSupport

/// R15: stores whose clocks disagree by 10 minutes (libfaketime), each way, start against a live one while
/// subscribes arrive; clients a minute off either way use the live store. One store stays live, the other refuses
/// and takes no request; every request reaches the live one (counts: requests applied by the live store).
enum ClockSkew {
    static let requests = 40

    static func run() async throws -> [ScenarioRow] {
        [
            try await pair(id: "R15a", live: nil, challenger: "+10m", what: "a store 10 minutes ahead of the live one"),
            try await pair(id: "R15b", live: "+10m", challenger: nil, what: "a store 10 minutes behind the live one"),
        ]
    }

    static func pair(id: String, live: String?, challenger: String?, what: String) async throws -> ScenarioRow {
        let broker = try await MosquittoBroker.start(.init(persistence: true))
        let first = try StoreProcess(broker: broker, clockOffset: live)
        try await first.start()
        let second = try StoreProcess(broker: broker, clockOffset: challenger)
        let child = try second.launch()
        let customers = Requests.customers(requests, prefix: "\(id.lowercased())c")
        try await Requests.publish(Requests.subscriptions(customers, to: "r15"), to: broker.url)
        _ = try? await child.waitForExit(within: 30)
        try? await StoreQueues.waitForWatches(requests, in: first.dataDirectory, within: 30)
        let applied = (try? StoreDatabase.queueLengths(readingOnly: first.dataDirectory).watches) ?? 0
        let other = (try? StoreDatabase.queueLengths(readingOnly: second.dataDirectory)) ?? (inbox: 0, outbox: 0, watches: 0)
        // Clients a minute behind and a minute ahead of the live store.
        var clients: [String] = []
        for (name, offset) in [("behind", offset(live, minus: 1)), ("ahead", offset(live, plus: 1))] {
            let (executable, arguments) = FakeTime.command(
                restockExecutable, ["subscribe", "--broker", broker.url, "--customer", "\(id.lowercased())-\(name)", "--sku", "r15"], offset: offset)
            let result = try await ChildProcess.run(
                executable, arguments, environment: FakeTime.environment(offset: offset), within: 60, ownProcessGroup: offset != nil)
            clients.append("a client a minute \(name): \(result.status == 0 ? "confirmed" : result.standardError.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        let takeovers = broker.log.components(separatedBy: "already connected, closing old connection").count - 1

        var row = ScenarioRow(id, "\(what) starts during \(requests) subscribes; clients a minute off each way (counts: requests applied by the live store)", expected: requests, distinct: applied, deliveries: applied)
        row.notes.append("the other: exit \(child.exitStatus.map(String.init) ?? "none (running)"), requests it journaled \(other.inbox), watches \(other.watches); sessions taken over on the broker: \(takeovers)")
        row.notes += clients
        row.check(first.exitStatus == nil, "the live store stopped: \(first.log.suffix(300))")
        row.check(child.exitStatus != nil && child.exitStatus != 0, "the skewed store did not refuse: \(second.log.suffix(300))")
        row.check(second.log.contains("is already running on this broker"), "the refusal does not say why")
        row.check(other.inbox == 0 && other.watches == 0, "the refused store took requests")
        row.check(takeovers == 0, "the store's session was taken over \(takeovers) times")
        row.check(clients.allSatisfy { $0.hasSuffix("confirmed") }, "a client a minute off did not get its answer")
        if child.exitStatus == nil { try await second.send(SIGTERM) }
        try await first.send(SIGTERM)
        return row
    }

    /// An offset a minute before or after `base` (`nil`: the machine's clock), never negative: libfaketime with a
    /// negative offset stops a Swift program here, so "a minute behind" a store on the true clock is impossible and
    /// the client runs on the true clock instead (0 s behind: the case the old check already failed at 7 s).
    static func offset(_ base: String?, minus: Int) -> String? {
        let minutes = (base.flatMap { Int($0.dropFirst().dropLast()) } ?? 0) - minus
        return minutes > 0 ? "+\(minutes)m" : nil
    }

    static func offset(_ base: String?, plus: Int) -> String? {
        "+\((base.flatMap { Int($0.dropFirst().dropLast()) } ?? 0) + plus)m"
    }
}
