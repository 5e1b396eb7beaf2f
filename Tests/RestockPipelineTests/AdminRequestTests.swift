import Foundation
import RestockCore
import Testing

@testable import RestockPipeline

/// The admin's forget request, as bytes from outside: property tests over random and assembled payloads.
@Suite("Admin requests (no broker)")
struct AdminRequestTests {
    @Test("a forget request decodes to its customer, written any way the contract allows, and reads back from its payload")
    func decodes() throws {
        let alice = try CustomerID("alice")
        for text in [#"{"customer":"alice"}"#, #" {"customer" : "alice", "note": [1e400]} "#, "\u{FEFF}{\"customer\":\"al\\u0069ce\"}"] {
            #expect(try ForgetRequest(payload: Array(text.utf8)).customer == alice, "\(text)")
        }
        #expect(try ForgetRequest(payload: ForgetRequest(customer: alice).payload) == ForgetRequest(customer: alice))
        #expect(try RequestDecoder.forget(payload: Array(#"{"customer":"alice"}"#.utf8)) == .forget(alice))
    }

    @Test("an array, a string or a bare word on an admin topic is refused naming that topic's own request, never the customer's bare SKU (found by the issue 24 trial)")
    func adminShapes() {
        func detail(_ decode: () throws -> Void) -> String? {
            do { try decode() } catch let error as RequestRefusal { return error.code == .invalidJSON ? error.detail : "code \(error.code)" } catch {
                return "\(error)"
            }
            return nil
        }
        for payload in ["[\"alice\"]", "\"alice\"", "alice"].map({ Array($0.utf8) }) {
            #expect(detail { _ = try ForgetRequest(payload: payload) }?.hasPrefix("a forget request is a JSON object") == true)
            #expect(detail { _ = try DeadLetterAction(payload: payload) }?.hasPrefix("a dead-letter request is a JSON object") == true)
            #expect(detail { _ = try StockRequest(payload: payload) }?.hasPrefix("a stock request is a JSON object") == true)
            #expect(detail { _ = try ReportRequest(payload: payload) }?.hasPrefix("a report request is empty or a JSON object") == true)
            #expect(
                detail { _ = try ReportRequest(payload: payload, shape: ReportRequest.deadLetterListShape) }?
                    .hasPrefix("a dead-letter list request is empty or a JSON object") == true)
        }
    }

    @Test("any payload is a customer or a refusal with a documented code and a detail; never a trap")
    func anyPayload() {
        var generator = SystemRandomNumberGenerator()
        let pieces = [#"{"#, #"}"#, #""customer""#, ":", ",", #""alice""#, #""a b""#, "null", "1", "[", "]", " ", "\u{FEFF}", "\\u0000", #"""#, "é", "\u{0}"]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            var bytes = Array(text.utf8)
            if Bool.random(using: &generator) { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
            do {
                let request = try ForgetRequest(payload: bytes)
                #expect(request.customer.rawValue.wholeMatch(of: /[A-Za-z0-9][A-Za-z0-9._-]{0,63}/) != nil)
            } catch {
                #expect([.invalidJSON, .invalidUTF8, .invalidField, .invalidCustomer, .payloadTooLarge].contains(error.code), "\(text): \(error)")
                #expect(!error.detail.isEmpty)
            }
        }
        let large = Array(#"{"customer":"alice"}"#.utf8) + [UInt8](repeating: 0x20, count: RequestDecoder.maximumPayloadSize)
        #expect(throws: RequestRefusal.self) { try ForgetRequest(payload: large) }
    }

    @Test("the store's topics route admin/forget, and nothing near it")
    func topics() throws {
        let topics = try RestockTopics(store: StoreID("apple"))
        #expect(topics.request(for: "restock/apple/admin/forget") == .forget)
        for near in ["restock/apple/admin/forget/x", "restock/apple/admin/forgotten", "restock/apple/admin/Forget", "restock/pear/admin/forget"] {
            #expect(topics.request(for: near) == nil, "\(near)")
        }
        #expect(topics.requestFilters.contains("restock/apple/admin/forget"))
    }

    @Test("report requests: empty, or sku and id; dead-letter actions: exactly one of replay and drop, an id from 1")
    func reportAndDeadLetterRequests() throws {
        #expect(try ReportRequest(payload: []) == ReportRequest())
        #expect(try ReportRequest(payload: Array(" \n".utf8)) == ReportRequest())
        #expect(try ReportRequest(payload: Array(#"{"sku":"tv","id":"r1"}"#.utf8)) == ReportRequest(sku: try SKU("tv"), id: "r1"))
        let typed = ReportRequest(sku: try SKU("tv"), id: "r2")
        #expect(try ReportRequest(payload: typed.payload) == typed)
        #expect(try DeadLetterAction(payload: Array(#"{"replay":17}"#.utf8)) == .replay(17))
        #expect(try DeadLetterAction(payload: Array(#"{"drop":1.7e1}"#.utf8)) == .drop(17))
        #expect(try DeadLetterAction(payload: DeadLetterAction.drop(Int64.max).payload) == .drop(Int64.max))
        let refused: [(String, RefusalCode)] = [
            ("tv", .invalidJSON), (#"{"sku":"not a sku"}"#, .invalidSKU), (#"{"id":"a b"}"#, .invalidField), (#"{"sku":5}"#, .invalidField),
        ]
        for (text, code) in refused {
            #expect(throws: RequestRefusal.self, "\(text)") { try ReportRequest(payload: Array(text.utf8)) }
            do { _ = try ReportRequest(payload: Array(text.utf8)) } catch { #expect(error.code == code, "\(text)") }
        }
        for text in [#"{}"#, #"{"replay":1,"drop":2}"#, #"{"replay":0}"#, #"{"drop":-3}"#, #"{"drop":1e400}"#, #"{"drop":1.5}"#, #"{"drop":"1"}"#] {
            do {
                _ = try DeadLetterAction(payload: Array(text.utf8))
                Issue.record("\(text) was taken")
            } catch {
                #expect(error.code == .invalidField, "\(text): \(error)")
            }
        }
    }

    @Test("any payload is a report request, a dead-letter action, or a refusal with a documented code; never a trap")
    func anyAdminPayload() {
        var generator = SystemRandomNumberGenerator()
        let pieces = [
            "{", "}", #""sku""#, #""id""#, #""replay""#, #""drop""#, ":", ",", #""tv""#, "17", "-1", "0", "1e400", "9223372036854775808", "null", " ",
            "\u{FEFF}", #"""#, "[", "]",
        ]
        let documented: Set<RefusalCode> = [.invalidJSON, .invalidUTF8, .invalidField, .invalidSKU, .payloadTooLarge]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...10, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            var bytes = Array(text.utf8)
            if Int.random(in: 0..<8, using: &generator) == 0 { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
            do {
                let request = try ReportRequest(payload: bytes)
                #expect(try ReportRequest(payload: request.payload) == request)
            } catch {
                #expect(documented.contains(error.code), "\(text): \(error)")
            }
            do {
                let action = try DeadLetterAction(payload: bytes)
                #expect(action.id >= 1)
                #expect(try DeadLetterAction(payload: action.payload) == action)
            } catch {
                #expect(documented.contains(error.code), "\(text): \(error)")
            }
        }
    }
}
