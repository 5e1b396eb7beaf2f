import Deadlines
import Foundation
import RestockPipeline
import Synchronization

/// Whether a store process is alive, and whether it takes requests, for `/livez` and `/readyz` (docs/operations.md,
/// "Health and metrics"). ``StoreLauncher`` and ``StoreService`` move it through the store's phases; an HTTP endpoint
/// reads it from any thread.
public final class StoreHealth: Sendable {
    /// The answer to one check.
    public enum Check: Sendable, Equatable {
        /// The check passes.
        case passing
        /// The check fails, and why, in one line.
        case failing(String)
    }

    private enum Phase {
        case starting
        case standby(location: String)
        case running(StoreLifecycle)
        case draining
        case stopped(String)
    }

    private let phase = Mutex(Phase.starting)
    private let currentBroker = Mutex<String?>(nil)
    /// Those waiting in ``waitUntilOnline()``, resumed when the store goes online or stops.
    private let onlineWaiters = Mutex<(next: Int, waiting: [Int: CheckedContinuation<Void, any Error>])>((0, [:]))
    /// How many watches the store holds, and the most it may (`nil`: no limit).
    private let fill = Mutex<(@Sendable () -> (watches: Int, maximum: Int?))?>(nil)

    /// How full the store is, for `/readyz`: `watches 12 of 10000000 (0.0%)`, `watches 12 (no limit)`; `nil` before the
    /// store is made.
    public var watchesDetail: String? {
        guard let (watches, maximum) = fill.withLock({ $0 })?() else { return nil }
        guard let maximum else { return "watches \(watches) (no limit)" }
        let percent = (Double(watches) / Double(maximum) * 1000).rounded(.down) / 10
        let full = watches >= maximum ? ": full, new watches are refused store-full" : ""
        return "watches \(watches) of \(maximum) (\(percent)%)\(full)"
    }

    func watching(_ figures: @escaping @Sendable () -> (watches: Int, maximum: Int?)) { fill.withLock { $0 = figures } }

    /// Where the state is kept, the epoch of the lease held there, when it was last renewed, and the clock that times it.
    private struct Lease {
        let location: String
        var epoch: Int64?
        var renewedAt: ContinuousClock.Instant
        let now: @Sendable () -> ContinuousClock.Instant
        /// Why the last renewal failed, until one succeeds: the storage does not answer.
        var renewalFailure: String?
        /// When the renewal under way began; `nil` between renewals.
        var renewingSince: ContinuousClock.Instant?
    }
    private let lease = Mutex<Lease?>(nil)

    /// Where the store keeps its state and its lease there, for `/readyz`:
    /// `state in postgres://restock@db:5432/restock, lease epoch 3 renewed 0.4 s ago`; `nil` before the store opened it.
    public var storageDetail: String? {
        guard let lease = lease.withLock({ $0 }) else { return nil }
        let age = (lease.now() - lease.renewedAt).seconds
        let epoch = lease.epoch.map { "lease epoch \($0) renewed \((age * 10).rounded(.down) / 10) s ago" } ?? "no lease held"
        return "state in \(lease.location), \(epoch)"
    }

    /// Seconds since the store's lease was last renewed, for `restock_lease_age_seconds`; `nil` before it was taken.
    var leaseAge: Double? { lease.withLock { $0.map { ($0.now() - $0.renewedAt).seconds } } }

    /// The store keeps its state in `location`, where it took the lease at `epoch` just now, timed by `now`.
    func storing(in location: String, epoch: Int64?, now: @escaping @Sendable () -> ContinuousClock.Instant) {
        lease.withLock { $0 = Lease(location: location, epoch: epoch, renewedAt: now(), now: now) }
    }

    /// The lease held at `epoch` was renewed just now.
    func leaseRenewed(epoch: Int64?) {
        lease.withLock { lease in
            guard let now = lease?.now() else { return }
            lease?.epoch = epoch
            lease?.renewedAt = now
            lease?.renewalFailure = nil
            lease?.renewingSince = nil
        }
    }

    /// A renewal of the lease failed, for a reason that may pass (``StorageError/reason``): not ready until one succeeds.
    func leaseRenewalFailed(because reason: String) {
        lease.withLock { lease in
            lease?.renewalFailure = reason
            lease?.renewingSince = nil
        }
    }

    /// A renewal of the lease begins now: not ready once it has waited ``renewalPatience`` for its storage.
    func leaseRenewalBegan() {
        lease.withLock { lease in
            guard let now = lease?.now() else { return }
            lease?.renewingSince = now
        }
    }

    /// How long a renewal of the lease may wait for its storage before the store is not ready: a storage that does not
    /// answer at all (a database frozen, or cut off without a reset) fails no renewal, and the store answered 200 until
    /// its lease read as stale, about 5 s (found by an outside trial). A renewal on a storage that answers takes
    /// milliseconds, and one waits at most for the commit in progress.
    static let renewalPatience = Duration.seconds(2)

    /// Seconds the renewal under way has waited for its storage, once past ``renewalPatience``.
    private var overdueRenewal: Double? {
        lease.withLock { lease in
            guard let lease, let since = lease.renewingSince else { return nil }
            let waited = lease.now() - since
            return waited >= Self.renewalPatience ? waited.seconds : nil
        }
    }

    /// The broker of the `--broker` list the store's session is on, or last was; `nil` before it first connects.
    public var broker: String? { currentBroker.withLock { $0 } }

    func connected(to broker: String?) { currentBroker.withLock { $0 = broker } }

    /// A store that is starting.
    public init() {}

    /// Alive: the process and its stages run (starting, waiting as a standby, taking requests, paused or draining);
    /// failing once a stage has failed for good or the store has stopped.
    public var liveness: Check {
        switch phase.withLock({ $0 }) {
        case .starting, .standby, .draining: return .passing
        case .running(let lifecycle): return lifecycle.failure.map { .failing("\($0)") } ?? .passing
        case .stopped(let reason): return .failing(reason)
        }
    }

    /// Ready: online on the broker with its claim held, its session up, and taking requests — not starting, not a
    /// standby, not paused (a full disk), not draining.
    public var readiness: Check {
        switch phase.withLock({ $0 }) {
        case .starting: return .failing("starting: restoring the state and claiming the store id on the broker")
        case .standby(let location): return .failing("standby: waiting for the live store process on \(location) to stop, or to leave its lease unrenewed")
        case .running(let lifecycle):
            return lifecycle.notReadyReason(lease: leaseInDoubt).map { .failing($0) } ?? .passing
        case .draining: return .failing("draining: stopping on a signal, publishing what the outbox holds")
        case .stopped(let reason): return .failing(reason)
        }
    }

    /// Why the store's lease is in doubt, for `/readyz`; `nil` while it is renewed.
    private var leaseInDoubt: String? {
        // An idle store whose storage does not answer takes no request that would pause it: its lease tells (found
        // by an outside trial: 200 for 20 s with the database stopped, the lease 21 s old).
        // At once when a renewal fails: a store whose database has stopped answered 200 for about 3 s, until the
        // lease read as stale (found by an outside trial).
        if let failure = lease.withLock({ $0?.renewalFailure }) {
            return "the store cannot renew its lease: its storage does not answer (\(failure)); see the log"
        }
        if let waited = overdueRenewal {
            // The lease's age, not the renewal's wait, tells when a standby may take over (found by an outside trial: 13 s
            // into a freeze the line still said "at 5 s").
            let age = leaseAge ?? 0
            let lifetime = LeaseHolder.lifetime.seconds
            let takeover = age < lifetime
                ? "a standby may take the store over in \(((lifetime - age) * 10).rounded(.up) / 10) s"
                : "a standby may take the store over now"
            return "the store cannot renew its lease: its storage has not answered a renewal for \((waited * 10).rounded(.down) / 10) s; the lease was renewed \((age * 10).rounded(.down) / 10) s ago, and \(takeover)"
        }
        if let age = leaseAge, age >= LeaseHolder.lifetime.seconds {
            return "the store's lease has not been renewed for \(Int(age)) s: its storage does not answer (see the log); a standby may take the store over"
        }
        return nil
    }

    /// Returns once the store is online on the broker and takes requests: what a program that embeds it waits for
    /// before it relies on it (docs/embedding.md). Returns at once if it is already; signals, never polls.
    /// - Throws: ``StoreNotOnline`` when the store stopped (or failed) before it went online, with its reason;
    ///   `CancellationError` when the waiting task is cancelled.
    public func waitUntilOnline() async throws {
        let id = onlineWaiters.withLock { waiters in
            defer { waiters.next += 1 }
            return waiters.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let settled: Result<Void, any Error>? = phase.withLock { phase in
                    switch phase {
                    case .running, .draining: return .success(())
                    case .stopped(let reason): return .failure(StoreNotOnline(reason: reason))
                    case .starting, .standby:
                        // Checked under the waiters' lock: a cancellation after it finds the continuation there.
                        return onlineWaiters.withLock { waiters in
                            if Task.isCancelled { return .failure(CancellationError()) }
                            waiters.waiting[id] = continuation
                            return nil
                        }
                    }
                }
                if let settled { continuation.resume(with: settled) }
            }
        } onCancel: {
            onlineWaiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Resumes every ``waitUntilOnline()`` with `result`.
    private func settleWaiters(_ result: Result<Void, any Error>) {
        let waiting = onlineWaiters.withLock { waiters in
            defer { waiters.waiting = [:] }
            return Array(waiters.waiting.values)
        }
        for continuation in waiting { continuation.resume(with: result) }
    }

    func standby(on location: String) { phase.withLock { $0 = .standby(location: location) } }
    func starting() { phase.withLock { $0 = .starting } }
    func running(_ lifecycle: StoreLifecycle) {
        phase.withLock { $0 = .running(lifecycle) }
        settleWaiters(.success(()))
    }
    func draining() {
        phase.withLock { phase in
            if case .running = phase { phase = .draining }
        }
    }
    func stopped(_ reason: String) {
        phase.withLock { $0 = .stopped(reason) }
        settleWaiters(.failure(StoreNotOnline(reason: reason)))
    }
}

/// The store stopped before it went online (``StoreHealth/waitUntilOnline()``).
public struct StoreNotOnline: Error, CustomStringConvertible {
    /// Why, in one line: the store's own error, or `stopped`.
    public let reason: String

    /// The store did not go online, and why.
    public var description: String { "the store did not go online: \(reason)" }
}
