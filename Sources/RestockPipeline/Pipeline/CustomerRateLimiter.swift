import DequeModule
import RestockCore

/// How fast each customer's requests are applied: a token bucket per customer.
///
/// A customer's bucket holds up to ``Configuration/burst`` requests and refills at
/// ``Configuration/requestsPerSecond``; a request takes one, or is refused when there is none. With the default
/// (60 at once, then 1 a second) a person is never held up, and a script that subscribes to SKU after SKU is
/// slowed to one request a second (one customer at 200 requests a second once stopped the store for everyone).
/// A refusal is answered at most once per customer per ``answerInterval``, so a flood of refused requests
/// publishes at most one error a second per customer.
///
/// Used by the single applying stage, so it is a value with mutating methods, not shared between threads. Time
/// is injected (a monotonic `ContinuousClock.Instant`): an instant earlier than one already seen counts as that
/// one, an instant more than 292 years from the clock's epoch counts as that bound, and no instant makes the
/// arithmetic trap. Each call does O(1) work, amortised.
///
/// Memory: a customer whose bucket is full again, and whose last answered refusal is older than
/// ``answerInterval``, carries no information and is forgotten. Each call checks a few of the customers seen
/// longest ago (oldest first), so while requests come the limiter tracks about the customers active within the
/// last `max(burst / requestsPerSecond, 1)` seconds (at most twice that).
package struct CustomerRateLimiter: Sendable {
    /// What ``admit(_:at:)`` decided.
    package enum Admission: Sendable, Hashable {
        /// Apply the request.
        case admitted
        /// Do not apply the request. `answered`: whether to tell the customer (at most once per customer per
        /// ``CustomerRateLimiter/answerInterval``; the other refusals are dropped silently). `retryAfter`: how long
        /// until the customer's next request would be admitted.
        case refused(answered: Bool, retryAfter: Duration)
    }

    /// The limit: a burst and a sustained rate per customer, or off.
    package struct Configuration: Sendable, Hashable, CustomStringConvertible {
        /// The sustained rates accepted, in requests per second.
        package static let requestsPerSecondRange: ClosedRange<Double> = 0.001...1_000_000
        /// The bucket sizes accepted.
        package static let burstRange: ClosedRange<Int> = 1...1_000_000
        /// 60 requests at once, then 1 a second: lets a person through, stops a script.
        package static let standard = Configuration(checkedRequestsPerSecond: 1, burst: 60)
        /// No limit: every request is admitted and nothing is tracked.
        package static let off = Configuration()

        /// Whether requests are limited at all.
        package let isEnabled: Bool
        /// The sustained rate, in requests per second (0 when off).
        package let requestsPerSecond: Double
        /// How many requests a customer may send at once after a quiet spell (0 when off).
        package let burst: Int
        /// The time one request's token takes to come back: 1 / ``requestsPerSecond``, rounded to the nanosecond
        /// (0 when off). The bucket refills by exactly one request per interval.
        package let refillNanoseconds: Int64

        /// A limit of `burst` requests at once and `requestsPerSecond` sustained.
        /// - Throws: ``InvalidRateLimit`` when a number is outside ``requestsPerSecondRange`` or ``burstRange``
        ///   (NaN, infinite, zero and negative included).
        package init(requestsPerSecond: Double, burst: Int) throws(InvalidRateLimit) {
            // `contains` is false for NaN, so NaN is refused with the rest.
            guard Self.requestsPerSecondRange.contains(requestsPerSecond) else {
                throw .requestsPerSecond(requestsPerSecond)
            }
            guard Self.burstRange.contains(burst) else { throw .burst(burst) }
            self.init(checkedRequestsPerSecond: requestsPerSecond, burst: burst)
        }

        private init(checkedRequestsPerSecond rate: Double, burst: Int) {
            isEnabled = true
            requestsPerSecond = rate
            self.burst = burst
            // 1,000 through 10^12 ns for the rates accepted: the conversion cannot trap.
            refillNanoseconds = Int64((1e9 / rate).rounded())
        }

        private init() {
            isEnabled = false
            requestsPerSecond = 0
            burst = 0
            refillNanoseconds = 0
        }

        /// `at most 60 requests at once, then 1 a second`, or `off`.
        package var description: String {
            isEnabled ? "at most \(burst) requests at once, then \(InvalidRateLimit.plain(requestsPerSecond)) a second" : "off"
        }

        /// The one sentence that tells a refused customer what happened and what to do, for the errors topic.
        package func refusalDetail(for customer: CustomerID, retryAfter: Duration) -> String {
            // Whole seconds, rounded up, at least 1: the request is admitted if sent again that much later.
            // (`components` would trap on a duration past Int64.max seconds.)
            let attoseconds = retryAfter.attoseconds
            let wait = attoseconds <= 0 ? 1 : Int64(clamping: (attoseconds - 1) / 1_000_000_000_000_000_000 + 1)
            return "\(customer) sent requests too fast (\(self)): this one was not applied; send it again in \(wait) s"
        }
    }

    /// A configuration's number outside its range.
    package enum InvalidRateLimit: Error, Hashable, CustomStringConvertible {
        /// The sustained rate is outside ``Configuration/requestsPerSecondRange`` (or not a number).
        case requestsPerSecond(Double)
        /// The burst is outside ``Configuration/burstRange``.
        case burst(Int)

        package var description: String {
            switch self {
            case .requestsPerSecond(let value):
                let range = Configuration.requestsPerSecondRange
                return "invalid rate limit: \(Self.plain(value)) requests per second; use \(Self.plain(range.lowerBound)) to \(Self.plain(range.upperBound)), or turn the limit off"
            case .burst(let value):
                let range = Configuration.burstRange
                return "invalid rate limit: a burst of \(value) requests; use \(range.lowerBound) to \(range.upperBound), or turn the limit off"
            }
        }

        /// `1`, `0.5`, `1000000`, `nan`: a whole number without `.0`.
        static func plain(_ value: Double) -> String {
            value.isFinite && value == value.rounded() && value.magnitude < 1e15 ? String(Int64(value)) : "\(value)"
        }
    }

    /// At most one refusal per customer is answered within this interval.
    package static let answerInterval = Duration.seconds(1)
    /// How many of the oldest tracked customers one call checks (and forgets if they carry nothing): more than
    /// the one a call can add, so the table shrinks back once new customers stop coming.
    static let checksPerCall = 4

    /// What is known of one customer; times are nanoseconds since the clock's epoch.
    private struct Bucket {
        /// Nanoseconds of refill the bucket lacks at `updatedAt`: 0 is full, `burst × refill` empty.
        var owed: Int64
        var updatedAt: Int64
        /// When a refusal was last answered.
        var answeredAt: Int64?
    }

    /// The limit.
    package let configuration: Configuration
    private var buckets: [CustomerID: Bucket] = [:]
    /// Every tracked customer once, in the order of `queuedAt`: when it was added or last checked. A customer is
    /// checked again a horizon later, so the front is always the next one due.
    private var checks: Deque<(customer: CustomerID, queuedAt: Int64)> = []
    /// The latest instant seen, in nanoseconds since the clock's epoch.
    private var now: Int64?

    /// A limiter with no customer tracked.
    package init(_ configuration: Configuration = .standard) {
        self.configuration = configuration
    }

    /// The number of customers tracked (those whose bucket is not full, or whose last answered refusal is recent).
    package var trackedCustomerCount: Int { buckets.count }

    /// Takes one request of `customer` at `instant`: admitted while the customer's bucket has a request left,
    /// refused otherwise.
    package mutating func admit(_ customer: CustomerID, at instant: ContinuousClock.Instant) -> Admission {
        guard configuration.isEnabled else { return .admitted }
        let now = advance(to: instant)
        forgetSome(at: now)

        let refill = Int128(configuration.refillNanoseconds)
        // A request is admitted while the bucket lacks at most burst − 1 requests' refill.
        let tolerance = refill * Int128(configuration.burst - 1)
        let index = buckets.index(forKey: customer)
        var bucket = index.map { buckets.values[$0] } ?? Bucket(owed: 0, updatedAt: now)
        let owed = owing(bucket, at: now)
        let admission: Admission
        if owed <= tolerance {
            // At most burst × refill, at most 10^18: it fits.
            bucket.owed = Int64(clamping: owed + refill)
            bucket.updatedAt = now
            admission = .admitted
        } else {
            let answered = bucket.answeredAt.map { Int128(now) - Int128($0) >= Self.answerNanoseconds } ?? true
            if answered { bucket.answeredAt = now }
            admission = .refused(answered: answered, retryAfter: .nanoseconds(Int64(clamping: owed - tolerance)))
        }
        if let index {
            buckets.values[index] = bucket
        } else {
            buckets[customer] = bucket
            checks.append((customer, now))
        }
        return admission
    }

    private static let answerNanoseconds = Int128(1_000_000_000)

    /// The refill a bucket lacks at `now` (≥ 0), in nanoseconds; `now` is never before `updatedAt`.
    private func owing(_ bucket: Bucket, at now: Int64) -> Int128 {
        max(0, Int128(bucket.owed) - (Int128(now) - Int128(bucket.updatedAt)))
    }

    /// Nanoseconds since the clock's epoch, clamped to ±292 years, and never before the latest seen.
    private mutating func advance(to instant: ContinuousClock.Instant) -> Int64 {
        // The instant's own value, from the epoch whose value is 0: that subtraction cannot overflow, where
        // subtracting two odd instants could.
        let nanoseconds = Int64(clamping: ContinuousClock().systemEpoch.duration(to: instant).attoseconds / 1_000_000_000)
        let latest = max(now ?? nanoseconds, nanoseconds)
        now = latest
        return latest
    }

    /// Checks the customers due for a check, up to ``checksPerCall``: forgets those who carry nothing (a full
    /// bucket, no recent answered refusal), queues the others to be checked again a horizon later. A customer
    /// idle for a horizon carries nothing, so one queued at least a horizon ago and idle since goes.
    private mutating func forgetSome(at now: Int64) {
        let refill = Int128(configuration.refillNanoseconds)
        let horizon = max(refill * Int128(configuration.burst), Self.answerNanoseconds)
        for _ in 0..<Self.checksPerCall {
            guard let due = checks.first, Int128(now) - Int128(due.queuedAt) >= horizon else { return }
            checks.removeFirst()
            guard let index = buckets.index(forKey: due.customer) else { continue }
            let bucket = buckets.values[index]
            let answeredRecently = bucket.answeredAt.map { Int128(now) - Int128($0) < Self.answerNanoseconds } ?? false
            if owing(bucket, at: now) == 0 && !answeredRecently {
                buckets.remove(at: index)
            } else {
                checks.append((due.customer, now))
            }
        }
    }
}
