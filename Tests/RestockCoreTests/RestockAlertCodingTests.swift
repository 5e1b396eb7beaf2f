import Foundation
import Testing
@testable import RestockCore

@Suite("Alert payload, version 1")
struct RestockAlertCodingTests {
    let alert = RestockAlert(
        id: "apple-1", store: storeID(), customer: customer("alice"), sku: sku("iphone-15"), quantity: 5,
        position: 3, message: "Good news, alice: iphone-15 is back in stock at apple (5 available).",
        at: Date(timeIntervalSince1970: 1_795_000_000.25))

    @Test("encodes exactly the alert JSON of the contract")
    func exactJSON() throws {
        let json = String(decoding: alert.jsonData(), as: UTF8.self)
        #expect(
            json
                == #"{"at":"2026-11-18T11:06:40.250Z","customer":"alice","id":"apple-1","message":"Good news, alice: iphone-15 is back in stock at apple (5 available).","position":3,"quantity":5,"sku":"iphone-15","store":"apple","version":1}"#
        )
    }

    @Test("a store's own alert, written directly, is byte for byte what the JSON encoder writes, with an epoch or without", arguments: [nil, "7f3a9c2e41d0"])
    func directWritingMatchesEncoder(epoch: String?) throws {
        let raised = RestockAlert(
            store: storeID(), epoch: epoch, sequence: 42, customer: customer("alice.b_c-9"), sku: sku("iphone-15"), quantity: 1_000_000,
            position: 18_446_744_073_709_551_615, at: Date(timeIntervalSince1970: 1_795_000_000.125))
        let direct = raised.jsonData()
        let encoded = try PayloadCoding.encoder.encode(raised)
        #expect(String(decoding: direct, as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
        let decoded = try RestockAlert(jsonData: direct)
        #expect(decoded == raised)
        #expect(decoded.id == (epoch.map { "apple-\($0)-42" } ?? "apple-42") && decoded.message == raised.message)
    }

    @Test("an alert with a message of its own is escaped by the encoder")
    func givenTextIsEscaped() throws {
        var quoted = alert
        quoted.message = #"say "hi" \ now"#
        let decoded = try RestockAlert(jsonData: quoted.jsonData())
        #expect(decoded.message == quoted.message)
    }

    @Test("round trips")
    func roundTrip() throws {
        #expect(try RestockAlert(jsonData: alert.jsonData()) == alert)
    }

    @Test("decoding ignores fields it does not know")
    func unknownFields() throws {
        let json = #"""
            {"version":1,"id":"apple-9","store":"apple","customer":"bob","sku":"ipad","quantity":2,"position":7,
             "message":"hi","at":"2026-11-21T10:00:00Z","channel":"push","extra":{"nested":[1,2]}}
            """#
        let decoded = try RestockAlert(jsonData: Data(json.utf8))
        #expect(decoded.customer == customer("bob") && decoded.quantity == 2 && decoded.position == 7)
        #expect(decoded.at == Timestamp.date(from: "2026-11-21T10:00:00.000Z"))
    }

    @Test("decoding refuses an invalid identifier or timestamp")
    func refusesBadFields() {
        let badSKU = #"{"version":1,"id":"x","store":"apple","customer":"bob","sku":"a/b","quantity":1,"position":1,"message":"m","at":"2026-11-21T10:00:00Z"}"#
        #expect(throws: DecodingError.self) { try RestockAlert(jsonData: Data(badSKU.utf8)) }
        let badDate = badSKU.replacingOccurrences(of: "a/b", with: "ok").replacingOccurrences(of: "2026-11-21T10:00:00Z", with: "yesterday")
        #expect(throws: DecodingError.self) { try RestockAlert(jsonData: Data(badDate.utf8)) }
    }
}
