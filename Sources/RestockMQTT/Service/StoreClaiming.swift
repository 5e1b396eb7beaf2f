import RestockPipeline
import Deadlines
import Foundation
import Mosquitto
import Synchronization

/// The newest status and claim of a store seen on one connection.
struct Ownership: Sendable {
    var status: StoreStatus?
    var claim: StoreClaim?
}

/// What the readers of one claim have seen so far.
private final class OwnershipSeen: Sendable {
    private let state = Mutex((ownership: Ownership(), statusArrived: false, claimArrived: false))

    func status(_ status: StoreStatus?) { state.withLock { $0.ownership.status = status; $0.statusArrived = true } }
    func claim(_ claim: StoreClaim?) { state.withLock { $0.ownership.claim = claim; $0.claimArrived = true } }
    var ownership: Ownership { state.withLock { $0.ownership } }
    var bothArrived: Bool { state.withLock { $0.statusArrived && $0.claimArrived } }
}

extension StoreClient {
    /// A store instance's claim on its store id, on one clean connection (docs/contract.md, "One store per store id"):
    /// subscribes to the status and the claim, takes the retained ones (waiting at most `firstWait` for those
    /// that are missing), lets `check` refuse, publishes `claim` (retained, acknowledged), and after `settle`
    /// returns the newest status and claim seen: a claim another instance published after this one arrives
    /// here, in the broker's order.
    func claimStore(
        _ claim: StoreClaim, settle: Duration, firstWait: Duration, check: @escaping @Sendable (Ownership) throws -> Void,
        published: @escaping @Sendable () -> Void
    ) async throws -> Ownership {
        try await withClient { client in
            let seen = OwnershipSeen()
            let statuses = try client.messages(matching: self.topics.status)
            let claims = try client.messages(matching: self.topics.claim)
            let readers = [
                Task {
                    for await message in statuses {
                        seen.status(try? JSONDecoder().decode(StoreStatus.self, from: Data(message.payload)))
                    }
                },
                Task {
                    for await message in claims {
                        seen.claim(try? JSONDecoder().decode(StoreClaim.self, from: Data(message.payload)))
                    }
                },
            ]
            defer { readers.forEach { $0.cancel() } }
            try await client.subscribe(to: self.topics.status)
            try await client.subscribe(to: self.topics.claim)
            // Retained messages follow the SUBACKs; a topic without one has nothing to send.
            try? await waitUntil("the retained status and claim", within: firstWait.seconds, pollEvery: .milliseconds(5)) {
                seen.bothArrived
            }
            try check(seen.ownership)
            try await client.publish(claim.payloadBytes(), to: self.topics.claim, qos: .atLeastOnce, retain: true)
            published()
            try await Task.sleep(for: settle)  // the time a start that read before this claim has to claim after it
            return seen.ownership
        }
    }
}

extension StoreClient {
    /// Clears the retained claim when it is still `instance`'s (a start that stopped before it went online).
    func withdrawClaim(of instance: String) async throws {
        try await withClient { client in
            let claim = try await self.retained(StoreClaim.self, on: self.topics.claim, using: client, firstWait: .milliseconds(500)).first
            guard claim?.instance == instance else { return }
            try await client.publish([], to: self.topics.claim, qos: .atLeastOnce, retain: true)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
