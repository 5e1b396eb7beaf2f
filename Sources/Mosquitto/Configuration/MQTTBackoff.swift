/// A backoff curve: how long to wait before each attempt of something that failed, soon after the failure, then
/// less and less often, up to a cap, each wait shortened by a random part (jitter) so that many clients of one
/// broker do not all try again at once. The one curve of the client: its reconnects (``MQTTConfiguration/reconnect``)
/// and the subscriptions it asks for again after a refusal use it.
///
/// The wait before attempt `n` (counting from 0 after each success) is `min(initialDelay × 2ⁿ, maximumDelay)`, less
/// a random share of it of up to `jitter`. The reconnect default (200 ms, 800 ms, 0.5) tries first 100–200 ms after
/// the loss, then after 200–400 ms, then every 400–800 ms: a broker that comes back after an outage of any length is
/// found within 800 ms of listening again (plus the handshake), at the cost of one TCP connection attempt or two a
/// second while it is away.
public struct MQTTBackoff: Sendable, Hashable {
    /// The wait before the first attempt, before jitter.
    public var initialDelay: Duration
    /// The longest wait between two attempts.
    public var maximumDelay: Duration
    /// The largest share of each wait taken off at random, from 0 (none) to 1.
    public var jitter: Double

    /// The reconnect policy's default: 200 ms, doubling up to 800 ms, with up to half of each wait taken off at random.
    public static let `default` = MQTTBackoff()

    /// Creates a curve; the defaults are the reconnect policy's.
    public init(initialDelay: Duration = .milliseconds(200), maximumDelay: Duration = .milliseconds(800), jitter: Double = 0.5) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.jitter = jitter
    }

    /// The wait before attempt `attempt` (0 for the first after a failure; less counts as 0), with `random` in `0..<1`.
    public func delay(beforeAttempt attempt: Int, random: Double) -> Duration {
        var base = initialDelay
        for _ in 0..<min(max(attempt, 0), 62) where base < maximumDelay { base *= 2 }
        base = min(base, maximumDelay)
        return base - base * (jitter * random)
    }

    func validate() throws(MQTTError) {
        guard initialDelay > .zero, maximumDelay >= initialDelay else {
            throw .invalidConfiguration("the first reconnect delay must be above 0 and no longer than the maximum")
        }
        guard (0...1).contains(jitter) else { throw .invalidConfiguration("reconnect jitter must be 0 to 1, not \(jitter)") }
    }
}

/// When a client that lost its connection tries again (``MQTTConfiguration/reconnect``): the client's one
/// ``MQTTBackoff`` curve, under the name it has always had.
public typealias MQTTReconnectPolicy = MQTTBackoff

extension MQTTBackoff {
    /// A subscription the broker refused when the client made it again after a reconnect (a cluster electing leaders):
    /// asked for again after 250 ms, doubling up to 4 s, without jitter.
    static let resubscription = MQTTBackoff(initialDelay: .milliseconds(250), maximumDelay: .seconds(4), jitter: 0)
}
