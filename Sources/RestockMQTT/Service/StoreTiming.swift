import Deadlines
import RestockPipeline

/// How long the store waits for what, in one place: the contract's intervals (the heartbeat, the claim's renewal,
/// how long an instance's heartbeat may stand still), how long a reader watches for a sign of life, and how often a
/// paused stage tries again. The defaults are the contract's (docs/contract.md, "One store per store id"); tests
/// shorten them all, to run takeovers and pauses in milliseconds.
package struct StoreTiming: Sendable {
    /// How often a live store refreshes its status.
    package var heartbeat = StoreStatus.heartbeatInterval
    /// How long an instance may show no sign of life, by the reader's own clock, before it counts as gone.
    package var staleAfter = Duration.seconds(StoreStatus.staleAfter)
    /// How often a starting store publishes its claim again.
    package var claimRenewal = StoreClaim.renewInterval
    /// How long a start waits after its claim for a later claim of another instance.
    package var claimSettle = Duration.milliseconds(300)
    /// How long a reader waits after subscribing for the retained status and claim before it takes their absence as
    /// "none": the broker sends them right after the SUBACK.
    package var retainedWait = Duration.milliseconds(500)
    /// How often a paused stage (a full disk) tries again.
    package var retry = Duration.seconds(1)
    /// How often a pause that lasts is logged again.
    package var pauseReport = Duration.seconds(60)
    /// How often the journal lag is looked at (``JournalLagWatch``).
    package var lagCheck = Duration.seconds(1)
    /// How often the metrics' gauges are sampled (``GaugeSampler``): not scaled down for tests, since nothing scrapes
    /// faster than a second and a query of the outbox each few milliseconds only takes the pipeline's thread from them.
    package var gaugeSampling = Duration.seconds(1)
    /// How often the data directory's lease is renewed (``LeaseRenewal``): not scaled down for tests, since a standby
    /// judges it by ``LeaseHolder/lifetime``, which they do not change.
    package var leaseRenewal = LeaseHolder.renewalInterval
    /// How long a stopping store waits, after its drain, for the acknowledgements of what it sent.
    package var acknowledgementGrace = Duration.seconds(2)

    /// The clock every interval here is measured by: the system's monotonic clock, or a manual one in tests
    /// (``ServiceClock/manual(_:)``), which ``scaled(down:)`` keeps.
    package var clock = ServiceClock.continuous

    /// The contract's timing.
    package static let contract = StoreTiming()

    /// How long a reader watches for a sign of life before it concludes there is none: two heartbeats and a quarter.
    package var livenessWindow: Duration { heartbeat * 2 + heartbeat / 4 }

    package init() {}

    /// Every interval divided by `factor` (tests: 100 makes a heartbeat 20 ms).
    package func scaled(down factor: Int) -> StoreTiming {
        var timing = self
        timing.heartbeat /= factor
        timing.staleAfter /= factor
        timing.claimRenewal /= factor
        timing.claimSettle /= factor
        timing.retainedWait /= factor
        timing.retry /= factor
        timing.pauseReport /= factor
        timing.acknowledgementGrace /= factor
        timing.lagCheck /= factor
        return timing
    }
}
