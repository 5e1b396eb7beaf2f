import Deadlines
import Foundation
import Mosquitto
import RestockPipeline
import Synchronization

/// What one connection has seen of a store's retained status and claim, timed by this process's own monotonic
/// clock: the rule of docs/contract.md, "One store per store id".
///
/// An instance is *live* when its status showed a sign of life here within ``StoreStatus/staleAfter`` seconds: a
/// status published while this connection was subscribed (delivered live, not from the broker's retained store), or
/// a heartbeat that changed. Nothing compares a time written by another machine with this one's, so stores and
/// clients whose clocks disagree by minutes still agree on which instance is live. The same holds for claims: a
/// starting store publishes its claim again every ``StoreClaim/renewInterval``.
///
/// Fed by the connection's message stream (``received(_:)``), its connection events (``connected(readingClaim:)``)
/// and its subscriptions (``subscribed()``); read from any task.
package final class StoreLiveness: Sendable {
    private struct Seen {
        /// The last status and claim received, and the last heartbeat or claim time of each instance.
        var status: StoreStatus?
        var claim: StoreClaim?
        var heartbeats: [String: String] = [:]
        var claimTimes: [String: String] = [:]
        /// When each instance last showed a sign of life in its status, and in its claim.
        var statusLife: [String: ContinuousClock.Instant] = [:]
        var claimLife: [String: ContinuousClock.Instant] = [:]
        /// Every instance whose status showed a sign of life here while online, since this view began, and when it last
        /// did — kept when it says offline later.
        var seenOnline: [String: ContinuousClock.Instant] = [:]
        /// Every instance a status or claim named here; and, once this store went online, those it knew of by then:
        /// instances older than this one (it started only after none of them was live).
        var known: Set<String> = []
        var older: Set<String> = []
        /// When the status (and claim) were last subscribed to — the broker sends the retained ones right after its
        /// answer — and whether they have come since the connection last (re)connected.
        var subscribedAt: ContinuousClock.Instant?
        var statusArrived = false
        var claimArrived = false
        /// Whether the connection reads the claim too (a store does; a client reads the status only).
        var readsClaim = true
    }

    private let seen = Mutex(Seen())
    /// Opened, and replaced by a new one, at every change of the view: a wait takes the current one before it judges
    /// the view, so a change that comes meanwhile ends the wait at once (signals, not polls).
    private let changes = Mutex(Latch())
    private let topics: RestockTopics
    private let timing: StoreTiming
    private var clock: ServiceClock { timing.clock }

    /// A view of `topics`' status and claim, judged by `timing` (the contract's by default).
    package init(topics: RestockTopics, timing: StoreTiming = .contract) {
        self.topics = topics
        self.timing = timing
    }

    // MARK: Feeding

    /// The connection (re)connected, or is about to subscribe again: the view is not current until the retained
    /// status (and claim) come again, or ``StoreTiming/retainedWait`` passes after the next ``subscribed()``.
    /// - Parameter readingClaim: Whether the connection is subscribed to the claim too, so that the view is current
    ///   only once the retained claim has come as well.
    package func connected(readingClaim: Bool = true) {
        seen.withLock {
            $0.subscribedAt = nil
            $0.statusArrived = false
            $0.claimArrived = false
            $0.readsClaim = readingClaim
        }
        changed()
    }

    /// The broker has answered the subscription to the status (and claim): the retained ones follow at once, so
    /// their absence ``StoreTiming/retainedWait`` from now means there are none — counted from the answer, not the
    /// request, so that a slow link does not make a live store look unknown.
    package func subscribed() {
        let now = clock.now
        seen.withLock { $0.subscribedAt = now }
        changed()
    }

    /// A message on the status or claim topic (others are ignored).
    package func received(_ message: MQTTMessage) {
        let now = clock.now
        if message.topic == topics.status {
            let status = message.payload.isEmpty ? nil : try? JSONDecoder().decode(StoreStatus.self, from: Data(message.payload))
            seen.withLock { seen in
                seen.status = status
                seen.statusArrived = true
                guard let status, let instance = status.instance else { return }
                seen.known.insert(instance)
                // An instance that said it is offline (stopped, or its will) shows no more life until it says online again.
                guard status.isOnline else { seen.statusLife[instance] = nil; return }
                let beat = status.heartbeatAt ?? ""
                // Published just now (not replayed from the retained store), or a heartbeat that moved on.
                if !message.retain || seen.heartbeats[instance].map({ $0 != beat }) == true {
                    seen.statusLife[instance] = now
                    seen.seenOnline[instance] = now
                }
                seen.heartbeats[instance] = beat
            }
        } else if message.topic == topics.claim {
            let claim = message.payload.isEmpty ? nil : try? JSONDecoder().decode(StoreClaim.self, from: Data(message.payload))
            seen.withLock { seen in
                seen.claim = claim
                seen.claimArrived = true
                guard let claim else { return }
                seen.known.insert(claim.instance)
                if !message.retain || seen.claimTimes[claim.instance].map({ $0 != claim.at }) == true { seen.claimLife[claim.instance] = now }
                seen.claimTimes[claim.instance] = claim.at
            }
        } else {
            return
        }
        changed()
    }

    /// Wakes every wait on the view (``waitForChange(_:until:)``).
    private func changed() {
        let opened = changes.withLock { latch in
            defer { latch = Latch() }
            return latch
        }
        opened.open()
    }

    /// What a wait on the view's next change waits on: taken before the view is judged.
    package func nextChange() -> Latch { changes.withLock { $0 } }

    /// Waits until the view changes after `signal` was taken (``nextChange()``), or `deadline` passes (`nil`: no
    /// deadline). Throws `CancellationError` when the waiting task is cancelled.
    package func waitForChange(_ signal: Latch, until deadline: ContinuousClock.Instant?) async throws {
        if let deadline {
            let left = deadline - clock.now
            if left > .zero { _ = await signal.wait(timeout: left) }
        } else {
            _ = await signal.wait()
        }
        try Task.checkCancellation()
    }

    // MARK: Reading

    /// The last status received.
    package var status: StoreStatus? { seen.withLock { $0.status } }
    /// The last claim received.
    package var claim: StoreClaim? { seen.withLock { $0.claim } }

    /// Whether `instance`'s status showed a sign of life within ``StoreStatus/staleAfter`` seconds.
    package func isLive(_ instance: String) -> Bool {
        let now = clock.now
        return seen.withLock { $0.statusLife[instance].map { now - $0 <= timing.staleAfter } ?? false }
    }

    /// This store (`own`) went online: every other instance named here so far is older than it.
    package func wentOnline(own: String) {
        seen.withLock { $0.older = $0.known.subtracting([own]) }
    }

    /// Whether `instance` was named here before this store went online: it is older than this one.
    package func isOlder(_ instance: String) -> Bool { seen.withLock { $0.older.contains(instance) } }

    /// Whether `instance`'s status showed a sign of life here while online, at any time since this view began.
    package func hasBeenSeenOnline(_ instance: String) -> Bool { seen.withLock { $0.seenOnline[instance] != nil } }

    /// The instance, not in `excluded`, whose status showed a sign of life here most recently, within
    /// ``StoreStatus/staleAfter`` seconds, and which has not said offline since — whether or not its status is still
    /// the retained one: an instance cut off from the broker can overwrite the newer one's status with heartbeats it
    /// sent before it knew (held by the network, or by a frozen process), but the newer one's live statuses came here
    /// all the same.
    package func recentlyLiveInstance(otherThan excluded: Set<String>) -> String? {
        let now = clock.now
        return seen.withLock { seen in
            seen.statusLife.filter { !excluded.contains($0.key) && now - $0.value <= timing.staleAfter }.max { $0.value < $1.value }?.key
        }
    }

    /// Whether `instance`'s claim was published again within ``StoreStatus/staleAfter`` seconds: it is starting.
    package func isClaiming(_ instance: String) -> Bool {
        let now = clock.now
        return seen.withLock { $0.claimLife[instance].map { now - $0 <= timing.staleAfter } ?? false }
    }

    /// Waits until the view is the broker's current one: the retained status and claim received since the last
    /// (re)connection, or ``StoreTiming/retainedWait`` passed since the broker answered the subscription without them
    /// (there are none). Returns at once when it is.
    package func waitUntilCurrent() async throws {
        while true {
            let signal = nextChange()
            let now = clock.now
            let (current, noneAfter) = seen.withLock { seen -> (Bool, ContinuousClock.Instant?) in
                if seen.statusArrived && (seen.claimArrived || !seen.readsClaim) { return (true, nil) }
                guard let subscribedAt = seen.subscribedAt else { return (false, nil) }
                return (now - subscribedAt >= timing.retainedWait, subscribedAt + timing.retainedWait)
            }
            if current { return }
            // Until the retained messages come, or the time after the answer that says there are none.
            try await waitForChange(signal, until: noneAfter)
        }
    }

    /// The instance, not in `excluded`, that is live: one whose status showed a sign of life here lately
    /// (``recentlyLiveInstance(otherThan:)``), or the one whose online status the broker holds, if it shows a sign of life
    /// within ``StoreTiming/livenessWindow``. `nil` when none does: the status is offline, one of `excluded`'s, absent, or
    /// shows no sign of life within the window.
    /// - Parameter trustingClocks: Take a heartbeat that reads fresh on this machine's clock as live at once (a shortcut
    ///   that can only err towards "live": for a check whose safe answer is "live").
    package func liveInstance(otherThan excluded: Set<String>, trustingClocks: Bool = false) async throws -> String? {
        try await waitUntilCurrent()
        let deadline = clock.now + timing.livenessWindow
        while true {
            let signal = nextChange()
            if let other = recentlyLiveInstance(otherThan: excluded) { return other }
            guard let status, status.isOnline, let other = status.instance, !excluded.contains(other) else { return nil }
            if trustingClocks && status.isLive(at: Date()) { return other }
            if clock.now >= deadline { return nil }
            try await waitForChange(signal, until: deadline)
        }
    }

    /// For a store whose session was lost, before it makes it again: the instance that took the store over from `own`
    /// (or is taking it), `nil` when none did (docs/contract.md, "One store per store id"):
    /// - one whose status came here live while online, at any time since this view began — even if it has said offline
    ///   since: it held the session after `own`, and what it acknowledged is in its data directory, not `own`'s;
    /// - the one whose claim the broker holds, when not `own`'s: it started after `own`. A start that refuses withdraws
    ///   its claim, so the view watches for ``StoreTiming/livenessWindow`` for that first;
    /// - the one whose online status the broker holds, when its heartbeat changes within the window. `own`'s own
    ///   heartbeats, sent before it knew it was frozen or cut off, can reach the broker late and overwrite that status:
    ///   the first two do not depend on it.
    package func newerInstance(than own: String) async throws -> String? {
        try await waitUntilCurrent()
        let deadline = clock.now + timing.livenessWindow
        while true {
            let signal = nextChange()
            let (status, claim, online, older) = seen.withLock { seen in
                (seen.status, seen.claim, Self.newestSeenOnline(in: seen, otherThan: own), seen.older)
            }
            let claimant = claim.map(\.instance).flatMap { $0 == own ? nil : $0 }
            let statusOther = status.flatMap { $0.isOnline ? $0.instance : nil }.flatMap { $0 == own ? nil : $0 }
            if let newer = online.newer { return newer }
            // Only instances older than `own` seen online (their late heartbeats): one took over all the same — `own` was
            // cut off, and its successor's status came only as the retained one once it was back — named by the status or
            // the claim the broker holds when either is not older (found by an outside trial: a store frozen past its
            // keepalive named the instance it had replaced).
            if let oldest = online.older { return [statusOther, claimant].compactMap { $0 }.first { !older.contains($0) } ?? oldest }
            if claimant == nil && statusOther == nil { return nil }
            if clock.now >= deadline { return claimant }
            try await waitForChange(signal, until: deadline)
        }
    }

    /// Of the instances other than `own` seen online here, the one seen alive last among those not older than `own` (named
    /// before `own` went online), and among the older ones: an older one's heartbeats, held by the network or a frozen
    /// process, can come here after the newer one's. (It was the first by name: a store taken over after it had seen a late
    /// heartbeat of the one it replaced named that one as its successor, found by an outside trial in 6 of 13 rounds.)
    private static func newestSeenOnline(in seen: Seen, otherThan own: String) -> (newer: String?, older: String?) {
        let others = seen.seenOnline.filter { $0.key != own }
        let newest = { (instances: [String: ContinuousClock.Instant]) in instances.max { $0.value < $1.value }?.key }
        return (newest(others.filter { !seen.older.contains($0.key) }), newest(others.filter { seen.older.contains($0.key) }))
    }

    /// The instance, not in `excluded`, whose claim the broker holds and which is still starting: its claim shows a
    /// sign of life within ``StoreTiming/livenessWindow``, and its status does not say it has gone offline since. `nil` otherwise.
    package func startingInstance(otherThan excluded: Set<String>, trustingClocks: Bool = false) async throws -> String? {
        try await waitUntilCurrent()
        let deadline = clock.now + timing.livenessWindow
        while true {
            let signal = nextChange()
            guard let claim, !excluded.contains(claim.instance) else { return nil }
            // A claim whose instance has since stopped (or was lost) is over.
            if let status, status.instance == claim.instance, !status.isOnline { return nil }
            if isClaiming(claim.instance) || (trustingClocks && claim.isFresh(at: Date())) { return claim.instance }
            if clock.now >= deadline { return nil }
            try await waitForChange(signal, until: deadline)
        }
    }
}
