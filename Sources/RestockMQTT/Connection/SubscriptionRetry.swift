import Deadlines
import Mosquitto
import RestockPipeline

/// How long a subscription the broker refuses with reason code 0x80 is asked for again before giving up
/// (docs/operations.md, "Past one broker"). A clustered broker (NATS) refuses new QoS 1 subscriptions for 4–34 s
/// after a node dies, while it elects leaders; mosquitto answers 0x80 only for a subscription its ACL forbids under
/// MQTT 3.1.1, which retrying does not change (the command then fails after `limit`).
package struct SubscriptionRetry: Sendable, Hashable {
    /// How long refusals are retried, from the first.
    package var limit: Duration
    /// The waits between two attempts: the Mosquitto client's one curve, without jitter.
    package var backoff: MQTTBackoff

    /// The first wait between two attempts; each wait doubles, up to `maximumDelay`.
    package var initialDelay: Duration {
        get { backoff.initialDelay }
        set { backoff.initialDelay = newValue }
    }
    /// The longest wait between two attempts.
    package var maximumDelay: Duration {
        get { backoff.maximumDelay }
        set { backoff.maximumDelay = newValue }
    }

    /// 60 s, first after 250 ms, then doubling up to 4 s.
    package static let `default` = SubscriptionRetry(limit: .seconds(60))

    package init(limit: Duration, initialDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(4)) {
        self.limit = limit
        self.backoff = MQTTBackoff(initialDelay: initialDelay, maximumDelay: maximumDelay, jitter: 0)
    }

    /// The wait before attempt `attempt` (1 for the first retry), never past what is left of `limit`.
    func delay(beforeAttempt attempt: Int, elapsed: Duration) -> Duration {
        max(.zero, min(backoff.delay(beforeAttempt: attempt - 1, random: 0), limit - elapsed))
    }
}

extension SubscriptionRetry {
    /// Runs `operation` until it succeeds, asking again by this retry while the error it throws `passes` (a cluster
    /// electing leaders); any other error, and the last one once `limit` has passed, is thrown.
    func run<T>(_ operation: () async throws -> T, while passes: (any Error) -> Bool) async throws -> T {
        let start = ContinuousClock.now
        var attempt = 0
        while true {
            do {
                return try await operation()
            } catch {
                let elapsed = ContinuousClock.now - start
                guard passes(error), elapsed < limit else { throw error }
                attempt += 1
                try await Task.sleep(for: delay(beforeAttempt: attempt, elapsed: elapsed))
            }
        }
    }
}

extension BrokerConnection {
    /// Subscribes, asking again by `retry` while the broker refuses with reason code 0x80 (unspecified: a cluster
    /// electing leaders); any other refusal or error is thrown at once.
    /// - Throws: ``RestockMQTTError/subscriptionRefused(filter:seconds:reason:)`` when the broker still refuses after
    ///   `retry.limit`.
    package func subscribe(
        to filter: String, qos: MQTTQoS = .atLeastOnce, options: MQTTSubscriptionOptions = .init(), retrying retry: SubscriptionRetry
    ) async throws {
        do {
            try await retry.run({ try await subscribe(to: filter, qos: qos, options: options) }) { error in
                if case MQTTError.subscribeRefused(_, 0x80, _) = error { return true }
                return false
            }
        } catch MQTTError.subscribeRefused(_, let code, let reason) where code == 0x80 {
            throw RestockMQTTError.subscriptionRefused(
                filter: filter, seconds: (retry.limit.seconds * 10).rounded() / 10, reason: "\(reason), reason code \(code)")
        }
    }
}
