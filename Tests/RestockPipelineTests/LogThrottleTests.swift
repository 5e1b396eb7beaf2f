import Testing

@testable import RestockPipeline

@Suite("A log line throttled")
struct LogThrottleTests {
    @Test("the first line is said, the next ones within the interval are held back and counted, and the first after it says how many")
    func oncePerInterval() {
        let throttle = LogThrottle(every: .seconds(60))
        let start = ContinuousClock.now
        #expect(throttle.admit(at: start) == (true, 0))
        for second in 1...59 { #expect(throttle.admit(at: start + .seconds(second)) == (false, 0)) }
        #expect(throttle.admit(at: start + .seconds(60)) == (true, 59))
        #expect(throttle.admit(at: start + .seconds(61)) == (false, 0))
        #expect(throttle.admit(at: start + .seconds(200)) == (true, 1))
    }
}
