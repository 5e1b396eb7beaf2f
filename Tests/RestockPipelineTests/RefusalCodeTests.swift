import Foundation
import RestockCore
import Testing

@testable import RestockPipeline

/// The refusal codes are one enum (``RefusalCode``), and the contract names exactly those: the table of
/// docs/contract.md, "Error codes", and the enum of docs/schemas/error.json, in the same order.
@Suite("Refusal codes")
struct RefusalCodeTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs")

    @Test("the schema of error reports lists exactly the codes of RefusalCode, in order")
    func schemaListsTheCodes() throws {
        let schema = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.docs.appendingPathComponent("schemas/error.json")))
        let properties = (schema as? [String: Any])?["properties"] as? [String: Any]
        let codes = (properties?["error"] as? [String: Any])?["enum"] as? [String]
        #expect(codes == RefusalCode.allCases.map(\.rawValue))
    }

    @Test("docs/contract.md's table of error codes lists exactly the codes of RefusalCode, in order")
    func contractListsTheCodes() throws {
        let contract = try String(contentsOf: Self.docs.appendingPathComponent("contract.md"), encoding: .utf8)
        let section = contract.components(separatedBy: "## Error codes").dropFirst().first?.components(separatedBy: "\n## ").first ?? ""
        let codes = section.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
        #expect(codes == RefusalCode.allCases.map(\.rawValue))
    }

    @Test("every error a request can cause in the core has a refusal code, and the decoder's refusals carry one")
    func coreErrorsHaveCodes() throws {
        let alice = try CustomerID("alice")
        let errors: [RestockError] = [
            .invalidIdentifier(kind: SKUKind.name, value: "x y"), .invalidMinQuantity("0"),
            .stockChangeOutOfRange(field: "set", value: "-1"), .quantityOutOfRange(sku: "ipad", requested: "2000000000"),
            .tooManyWatches(customer: alice, watching: 100, limit: 100), .storeFull(watches: 10, limit: 10),
        ]
        #expect(errors.map { $0.refusalCode?.rawValue } == errors.map(\.code))
        #expect(RestockError.invalidAlertsPerUnit(-1).refusalCode == nil)
        #expect(throws: RequestRefusal(code: .payloadTooLarge, detail: RequestDecoder.tooLarge(5_000).detail)) {
            try RequestDecoder.subscribe(alice, payload: Array(repeating: 0x61, count: 5_000))
        }
    }
}
