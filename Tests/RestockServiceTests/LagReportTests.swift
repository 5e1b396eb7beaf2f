@testable import RestockMQTT
import Testing

/// When the journal lag is logged (docs/operations.md, "Logs").
@Suite("Journal lag reports")
struct LagReportTests {
    @Test("past the threshold: a warning at once, again only once a minute while it lasts, and one notice when back under")
    func onceAMinute() {
        var report = LagReport(threshold: 1_000, reportEvery: .seconds(60))
        let start = ContinuousClock.now
        func at(_ seconds: Int) -> ContinuousClock.Instant { start.advanced(by: .seconds(seconds)) }
        #expect(report.observe(999, at: at(0)) == nil)
        #expect(report.observe(1_000, at: at(1)) == nil)
        #expect(report.observe(4_000, at: at(2)) == .behind(lag: 4_000, lasted: .zero))
        for second in 3..<62 { #expect(report.observe(5_000, at: at(second)) == nil, "second \(second)") }
        #expect(report.observe(3_000, at: at(62)) == .behind(lag: 3_000, lasted: .seconds(60)))
        #expect(report.observe(3_000, at: at(63)) == nil)
        // Under the threshold but not under a tenth of it: still the same episode.
        #expect(report.observe(999, at: at(64)) == nil)
        #expect(report.observe(1_500, at: at(65)) == nil)
        #expect(report.observe(10, at: at(70)) == .caughtUp(lag: 10, lasted: .seconds(68)))
        #expect(report.observe(0, at: at(71)) == nil)
        #expect(report.observe(2_000, at: at(72)) == .behind(lag: 2_000, lasted: .zero))
    }
}
