import Foundation
import RestockCore
import Testing

@testable import RestockPipeline

/// The texts of expiry: RFC 3339 times a request carries, and durations the command line takes.
@Suite("Expiry texts")
struct ExpiryTextTests {
    @Test("RFC 3339 in UTC is read exactly; any other form is refused")
    func times() {
        #expect(RFC3339.date("1970-01-01T00:00:00Z") == Date(timeIntervalSince1970: 0))
        #expect(RFC3339.date("2000-02-29T12:34:56.5Z") == Date(timeIntervalSince1970: 951_827_696.5))
        #expect(RFC3339.date("2027-05-20T12:00:00.123456789Z").map { $0.timeIntervalSince1970 } == 1_810_814_400.123)
        // Cut to the millisecond, never rounded up into the next second, minute… or year (found by the outside trial:
        // 9999-12-31T23:59:59.9996Z was kept as 10000-01-01T00:00:00.000Z, which no reader takes).
        for text in ["9999-12-31T23:59:59.9996Z", "9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999Z"] {
            #expect(RFC3339.date(text).map { Timestamp.string(from: SubscribeRequest.toTheMillisecond($0)) } == "9999-12-31T23:59:59.999Z", "\(text)")
        }
        #expect(RFC3339.date("2027-05-20T12:00:00.1239x9Z") == nil)
        for bad in [
            "2027-05-20T12:00:00", "2027-05-20T12:00:00+01:00", "2027-05-20t12:00:00Z", "2027-02-29T00:00:00Z", "2027-13-01T00:00:00Z",
            "2027-05-20T24:00:00Z", "2027-05-20T12:00:60Z", "1969-12-31T23:59:59Z", "2027-05-20T12:00:00.Z", "2027-05-20T12:00:00.1234567890Z",
            "", "tomorrow", "２０２７-05-20T12:00:00Z", "-027-05-20T12:00:00Z",
        ] {
            #expect(RFC3339.date(bad) == nil, "\(bad)")
        }
    }

    @Test("a time the store formats reads back as the same time")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let milliseconds = Int64.random(in: 0...253_402_300_799_999, using: &generator)
            let date = SubscribeRequest.toTheMillisecond(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            let text = Timestamp.string(from: date)
            #expect(RFC3339.date(text).map { Timestamp.string(from: SubscribeRequest.toTheMillisecond($0)) } == text)
            #expect(SubscribeRequest.toTheMillisecond(date) == date)
        }
    }

    @Test("durations: N with s, m, h or d; a huge or odd one is one sentence, never a trap")
    func durations() throws {
        #expect(try ExpiryText.seconds("90", option: "--x") == 90)
        #expect(try ExpiryText.seconds("30m", option: "--x") == 1_800)
        #expect(try ExpiryText.seconds("12h", option: "--x") == 43_200)
        #expect(try ExpiryText.seconds("180d", option: "--x") == 15_552_000)
        for bad in ["", "0", "d", "-1d", "1.5h", "1w", " 1d", "99999999999999999999d", "106751991167300d", "36501d", "1e3", "+5s", "٣s"] {
            #expect(throws: ExpiryText.Invalid.self, "\(bad)") { try ExpiryText.seconds(bad, option: "--x") }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...24, using: &generator)).map { _ in "0123456789smhdx-. ".randomElement(using: &generator)! })
            if let seconds = try? ExpiryText.seconds(text, option: "--x") { #expect((1...ExpiryText.maximumSeconds).contains(seconds)) }
        }
    }

    @Test("a subscribe carries expiresAt, to the millisecond, and its payload reads back as the same request")
    func subscribe() throws {
        let alice = try CustomerID("alice")
        let request = try RequestDecoder.subscribe(alice, payload: Array(#"{"sku":"tv","expiresAt":"2027-05-20T12:00:00.5Z"}"#.utf8))
        #expect(request == .subscribe(alice, try SKU("tv"), mode: .once, minQuantity: 1, expiresAt: SubscribeRequest.toTheMillisecond(Date(timeIntervalSince1970: 1_810_814_400.5))))
        let typed = try SubscribeRequest(sku: try SKU("tv"), expiresAt: Date(timeIntervalSince1970: 1_810_814_400.123_9))
        #expect(try SubscribeRequest(payload: typed.payload) == typed)
        #expect(throws: RequestRefusal.self) { try RequestDecoder.subscribe(alice, payload: Array(#"{"sku":"tv","expiresAt":5}"#.utf8)) }
        do {
            _ = try RequestDecoder.subscribe(alice, payload: Array(#"{"sku":"tv","expiresAt":"2027-05-20"}"#.utf8))
            Issue.record("a date without a time was taken")
        } catch {
            #expect(error.code == .invalidExpiresAt)
        }
    }
}
