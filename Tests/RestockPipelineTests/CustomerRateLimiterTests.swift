import RestockCore
import RestockPipeline
import SeededRandom
import Testing

/// An exact fraction, for the reference model's token counts.
private struct Fraction: Comparable {
    let numerator: Int128
    let denominator: Int128

    init(_ numerator: Int128, _ denominator: Int128 = 1) {
        precondition(denominator > 0)
        var (a, b) = (numerator.magnitude, UInt128(denominator))
        while b != 0 { (a, b) = (b, a % b) }
        let divisor = Int128(a == 0 ? 1 : a)
        self.numerator = numerator / divisor
        self.denominator = denominator / divisor
    }

    static func + (lhs: Self, rhs: Self) -> Self {
        Self(lhs.numerator * rhs.denominator + rhs.numerator * lhs.denominator, lhs.denominator * rhs.denominator)
    }
    static func - (lhs: Self, rhs: Self) -> Self { lhs + Self(-rhs.numerator, rhs.denominator) }
    static func * (lhs: Self, rhs: Self) -> Self {
        Self(lhs.numerator * rhs.numerator, lhs.denominator * rhs.denominator)
    }
    static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.numerator * rhs.denominator < rhs.numerator * lhs.denominator
    }
}

/// The reference: a token bucket per customer, written plainly, in exact fractions of tokens and integer
/// nanoseconds. It never forgets a customer, so it also checks that forgetting loses nothing.
private struct ReferenceLimiter {
    /// Nanoseconds for one token to come back: 10^9 / rate, rounded (as the configuration documents).
    let refill: Int64
    let burst: Int
    var latest: Int64?
    var tokens: [String: Fraction] = [:]
    var lastSeen: [String: Int64] = [:]
    var lastAnswered: [String: Int64] = [:]

    init(requestsPerSecond: Double, burst: Int) {
        refill = Int64((1e9 / requestsPerSecond).rounded())
        self.burst = burst
    }

    /// `time`: nanoseconds since the test's base instant.
    mutating func admit(_ customer: String, at time: Int64) -> CustomerRateLimiter.Admission {
        // Time never runs backwards: an earlier instant counts as the latest.
        let now = max(latest ?? time, time)
        latest = now
        let full = Fraction(Int128(burst))
        let elapsed = now - (lastSeen[customer] ?? now)
        var held = min(full, (tokens[customer] ?? full) + Fraction(Int128(elapsed), Int128(refill)))
        lastSeen[customer] = now
        defer { tokens[customer] = held }
        if held >= Fraction(1) {
            held = held - Fraction(1)
            return .admitted
        }
        let wait = (Fraction(1) - held) * Fraction(Int128(refill))
        precondition(wait.denominator == 1, "a wait of \(wait) ns is not whole")
        let answered = lastAnswered[customer].map { now - $0 >= 1_000_000_000 } ?? true
        if answered { lastAnswered[customer] = now }
        return .refused(answered: answered, retryAfter: .nanoseconds(Int64(wait.numerator)))
    }
}

/// A fixed base, so that instants are the same on every run.
private let base = ContinuousClock().systemEpoch.advanced(by: .seconds(1_000_000))
private func at(_ nanoseconds: Int64) -> ContinuousClock.Instant { base.advanced(by: .nanoseconds(nanoseconds)) }
private let second: Int64 = 1_000_000_000

@Suite("Per-customer rate limiter")
struct CustomerRateLimiterTests {
    static let configurations: [(requestsPerSecond: Double, burst: Int)] = [
        (1, 60), (1, 1), (0.5, 3), (3, 2), (7, 10), (1_000, 5), (0.001, 2), (250_000, 1),
    ]

    @Test("decisions equal a plain exact token bucket over seeded random schedules", arguments: 0..<8)
    func againstReference(_ configurationIndex: Int) throws {
        let (rate, burst) = Self.configurations[configurationIndex]
        for seed in 0..<40 {
            var random = SplitMix64(seed: UInt64(configurationIndex * 1_000 + seed))
            let configuration = try CustomerRateLimiter.Configuration(requestsPerSecond: rate, burst: burst)
            var limiter = CustomerRateLimiter(configuration)
            var reference = ReferenceLimiter(requestsPerSecond: rate, burst: burst)
            let refill = configuration.refillNanoseconds
            let customers = (0..<Int.random(in: 1...6, using: &random)).map { "c\($0)" }
            var time: Int64 = 0
            var steps: [String] = []
            for _ in 0..<1_500 {
                // Time moves in the ways that matter: not at all, floods, around the refill, past a full refill or the
                // answer interval, backwards, and by days.
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<4: break
                case 4..<9: time += Int64.random(in: 0...100_000, using: &random)
                case 9..<14: time += Int64.random(in: 0...(2 * refill), using: &random)
                case 14..<17: time += Int64.random(in: 0...(Int64(burst) * refill + 2 * second), using: &random)
                case 17: time -= Int64.random(in: 0...(2 * second), using: &random)
                case 18: time += Int64.random(in: 0...(3 * 86_400 * second), using: &random)
                default: time += second - Int64.random(in: -2...2, using: &random)
                }
                let who = customers.randomElement(using: &random)!
                steps.append("\(who)@\(time)")
                let decision = limiter.admit(customer(who), at: at(time))
                let expected = reference.admit(who, at: time)
                guard decision == expected else {
                    Issue.record("rate \(rate), burst \(burst), seed \(seed): \(decision), expected \(expected) after \(steps.suffix(12))")
                    return
                }
                if limiter.trackedCustomerCount > customers.count {
                    Issue.record("tracks \(limiter.trackedCustomerCount) customers of \(customers.count)")
                    return
                }
            }
        }
    }

    @Test("a person's 10 requests in 5 s are all admitted")
    func person() {
        var limiter = CustomerRateLimiter()
        let alice = customer("alice")
        let decisions = (0..<10).map { limiter.admit(alice, at: at(Int64($0) * second / 2)) }
        #expect(decisions.allSatisfy { $0 == .admitted })
    }

    @Test("200 requests a second for 10 s: the burst and one a second admitted, one refusal a second answered")
    func script() {
        var limiter = CustomerRateLimiter()
        let bot = customer("bot")
        var admitted = 0
        var answered: [Int64] = []
        for index in 0..<2_000 {
            let time = Int64(index) * 5_000_000
            switch limiter.admit(bot, at: at(time)) {
            case .admitted: admitted += 1
            case .refused(answered: true, _): answered.append(time)
            case .refused(answered: false, _): break
            }
        }
        // 60 at once; then over 9.995 s, 9 refills.
        #expect(admitted == 60 + 9)
        #expect((9...10).contains(answered.count))
        #expect(zip(answered, answered.dropFirst()).allSatisfy { $1 - $0 >= second })
    }

    @Test("a flood of refusals is answered at most once per customer per second")
    func answeredRefusals() {
        var random = SplitMix64(seed: 7)
        var limiter = CustomerRateLimiter(try! .init(requestsPerSecond: 2, burst: 3))
        let flooders = (0..<5).map { customer("flood\($0)") }
        var answered: [CustomerID: [Int64]] = [:]
        var time: Int64 = 0
        var refusals = 0
        while time < 5 * second {
            time += Int64.random(in: 0...400_000, using: &random)
            let who = flooders.randomElement(using: &random)!
            if case .refused(let isAnswered, let retryAfter) = limiter.admit(who, at: at(time)) {
                refusals += 1
                #expect(retryAfter > .zero && retryAfter <= .milliseconds(500))
                if isAnswered { answered[who, default: []].append(time) }
            }
        }
        #expect(refusals > 10_000)
        for who in flooders {
            let times = answered[who, default: []]
            #expect((1...5).contains(times.count), "\(who): \(times.count) answered refusals in 5 s")
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= second }, "\(who): \(times)")
        }
    }

    @Test("100,000 customers sending once: the limiter tracks those of the last minute, then forgets them")
    func memoryBounded() {
        var limiter = CustomerRateLimiter()
        // 100 new customers a second for 1,000 s; the default refills a full bucket in 60 s.
        var mostTracked = 0
        for index in 0..<100_000 {
            #expect(limiter.admit(customer("c\(index)"), at: at(Int64(index) * 10_000_000)) == .admitted)
            mostTracked = max(mostTracked, limiter.trackedCustomerCount)
        }
        #expect(mostTracked >= 5_000, "the test must fill the table: \(mostTracked)")
        #expect(mostTracked <= 6_100, "tracked \(mostTracked), more than a minute's customers")

        // Idle for two minutes; then a person's requests (one a second) make the limiter forget the rest.
        let idleFrom = 100_000 * 10_000_000 + 120 * second
        let alice = customer("alice")
        for index in 0..<2_000 {
            #expect(limiter.admit(alice, at: at(idleFrom + Int64(index) * second)) == .admitted)
        }
        #expect(limiter.trackedCustomerCount <= 1)
    }

    @Test("a customer is forgotten once the bucket is full and the last answer a second old, not before")
    func forgetting() throws {
        var limiter = CustomerRateLimiter(try .init(requestsPerSecond: 1_000, burst: 2))
        let bob = customer("bob")
        let dave = customer("dave")
        #expect(limiter.admit(bob, at: at(0)) == .admitted)
        #expect(limiter.admit(bob, at: at(0)) == .admitted)
        // At 0.5 s his bucket is full again; he empties it and is refused, answered.
        #expect(limiter.admit(bob, at: at(second / 2)) == .admitted)
        #expect(limiter.admit(bob, at: at(second / 2)) == .admitted)
        #expect(limiter.admit(bob, at: at(second / 2)) == .refused(answered: true, retryAfter: .milliseconds(1)))
        // At 1 s he is due for a check: his bucket is full, but the answer is recent, so he is kept...
        #expect(limiter.admit(dave, at: at(second)) == .admitted)
        #expect(limiter.trackedCustomerCount == 2)
        // ...and a refusal at 1.2 s is not answered.
        #expect(limiter.admit(bob, at: at(second * 6 / 5)) == .admitted)
        #expect(limiter.admit(bob, at: at(second * 6 / 5)) == .admitted)
        #expect(limiter.admit(bob, at: at(second * 6 / 5)) == .refused(answered: false, retryAfter: .milliseconds(1)))
        // Quiet until 3.5 s: both carry nothing and are forgotten; dave's own call tracks him again.
        #expect(limiter.admit(dave, at: at(second * 7 / 2)) == .admitted)
        #expect(limiter.trackedCustomerCount == 1)
        #expect(limiter.admit(bob, at: at(second * 7 / 2)) == .admitted)
        #expect(limiter.trackedCustomerCount == 2)
    }

    @Test("turned off, every request is admitted and nothing is tracked")
    func off() {
        var limiter = CustomerRateLimiter(.off)
        let bot = customer("bot")
        #expect((0..<10_000).allSatisfy { _ in limiter.admit(bot, at: at(0)) == .admitted })
        #expect(limiter.trackedCustomerCount == 0)
        #expect(!CustomerRateLimiter.Configuration.off.isEnabled)
        #expect(CustomerRateLimiter.Configuration.off.description == "off")
    }

    @Test("the default: 60 at once, then 1 a second")
    func standard() {
        let standard = CustomerRateLimiter.Configuration.standard
        #expect(standard.isEnabled && standard.burst == 60 && standard.requestsPerSecond == 1)
        #expect(standard.refillNanoseconds == second)
        #expect(CustomerRateLimiter().configuration == standard)
        #expect(standard.description == "at most 60 requests at once, then 1 a second")
        #expect(
            standard.refusalDetail(for: customer("alice"), retryAfter: .milliseconds(200))
                == "alice sent requests too fast (at most 60 requests at once, then 1 a second): this one was not applied; send it again in 1 s")
        #expect(standard.refusalDetail(for: customer("alice"), retryAfter: .seconds(2)).hasSuffix("again in 2 s"))
        #expect(standard.refusalDetail(for: customer("alice"), retryAfter: .nanoseconds(2_000_000_001)).hasSuffix("again in 3 s"))
        // Odd durations do not trap.
        #expect(standard.refusalDetail(for: customer("alice"), retryAfter: Duration(attoseconds: .max)).hasSuffix("again in \(Int64.max) s"))
        #expect(standard.refusalDetail(for: customer("alice"), retryAfter: Duration(attoseconds: .min)).hasSuffix("again in 1 s"))
    }

    @Test(
        "odd rates are refused with one clear line",
        arguments: [0, -1, -0.0, .nan, .infinity, -.infinity, 1e300, 0.000_999, 1_000_001, .leastNonzeroMagnitude, .greatestFiniteMagnitude])
    func invalidRate(_ rate: Double) {
        let error = #expect(throws: CustomerRateLimiter.InvalidRateLimit.self) {
            try CustomerRateLimiter.Configuration(requestsPerSecond: rate, burst: 60)
        }
        guard let error else { return }
        guard case .requestsPerSecond = error else {
            Issue.record("refused for the burst: \(error)")
            return
        }
        #expect(error.description.hasPrefix("invalid rate limit: "))
        #expect(error.description.hasSuffix(" requests per second; use 0.001 to 1000000, or turn the limit off"))
        #expect(!error.description.contains("\n"))
    }

    @Test("odd bursts are refused with one clear line", arguments: [0, -1, Int.min, Int.max, 1_000_001])
    func invalidBurst(_ burst: Int) {
        #expect(throws: CustomerRateLimiter.InvalidRateLimit.burst(burst)) {
            try CustomerRateLimiter.Configuration(requestsPerSecond: 1, burst: burst)
        }
        #expect(
            CustomerRateLimiter.InvalidRateLimit.burst(0).description
                == "invalid rate limit: a burst of 0 requests; use 1 to 1000000, or turn the limit off")
        #expect(
            CustomerRateLimiter.InvalidRateLimit.requestsPerSecond(.nan).description
                == "invalid rate limit: nan requests per second; use 0.001 to 1000000, or turn the limit off")
    }

    @Test("the ends of the ranges are accepted and work")
    func extremes() throws {
        let slowest = try CustomerRateLimiter.Configuration(requestsPerSecond: 0.001, burst: 1_000_000)
        #expect(slowest.refillNanoseconds == 1_000 * second)
        let fastest = try CustomerRateLimiter.Configuration(requestsPerSecond: 1_000_000, burst: 1)
        #expect(fastest.refillNanoseconds == 1_000)
        let bot = customer("bot")

        var slow = CustomerRateLimiter(slowest)
        for _ in 0..<1_000 { #expect(slow.admit(bot, at: at(0)) == .admitted) }
        var fast = CustomerRateLimiter(fastest)
        #expect(fast.admit(bot, at: at(0)) == .admitted)
        #expect(fast.admit(bot, at: at(999)) == .refused(answered: true, retryAfter: .nanoseconds(1)))
        #expect(fast.admit(bot, at: at(1_000)) == .admitted)
    }

    @Test("odd instants neither trap nor let time run backwards")
    func oddInstants() {
        let epoch = ContinuousClock().systemEpoch
        let odd: [ContinuousClock.Instant] = [
            epoch.advanced(by: Duration(attoseconds: .min)), epoch.advanced(by: .seconds(Int64.min)), epoch,
            .now, base, epoch.advanced(by: .seconds(Int64.max)), epoch.advanced(by: Duration(attoseconds: .max)),
        ]
        var random = SplitMix64(seed: 3)
        var limiter = CustomerRateLimiter(try! .init(requestsPerSecond: 1_000_000, burst: 3))
        let customers = (0..<3).map { customer("c\($0)") }
        for _ in 0..<2_000 {
            _ = limiter.admit(customers.randomElement(using: &random)!, at: odd.randomElement(using: &random)!)
        }
        // The latest instant seen is the end of time: it stays there, so a new customer gets its burst and
        // then refusals, and only the first is answered.
        let late = customer("late")
        let decisions = (0..<10).map { _ in limiter.admit(late, at: odd[0]) }
        #expect(decisions.prefix(3).allSatisfy { $0 == .admitted })
        #expect(decisions[3] == .refused(answered: true, retryAfter: .nanoseconds(1_000)))
        #expect(decisions.dropFirst(4).allSatisfy { $0 == .refused(answered: false, retryAfter: .nanoseconds(1_000)) })
        #expect(limiter.trackedCustomerCount <= 4)
    }
}
