import Foundation
import Testing
@testable import RestockCore

/// docs/contract.md, Versioning: a later release may add fields to an alert without changing `version`, and a
/// consumer written against version 1 reads it. `RestockAlert` is such a consumer; the alert is the contract
/// checks' own fixture, the one `restock listen --json` is given in Tests/Contract.
@Suite("The contract's rule for adding fields")
struct ContractVersioningTests {
    static let fixture = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Contract/alert-v1-extra-field.json")

    @Test("a version 1 consumer reads an alert that carries fields it does not know")
    func readsExtraFields() throws {
        let data = try Data(contentsOf: Self.fixture)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["warehouse"] != nil && object["channel"] != nil, "the fixture must carry fields version 1 does not know")

        let alert = try RestockAlert(jsonData: data)
        #expect(alert.version == 1 && alert.id == "apple-77")
        #expect(alert.store == storeID() && alert.customer == customer("zoe") && alert.sku == sku("iphone-15"))
        #expect(alert.quantity == 5 && alert.position == 3)
        #expect(alert.message == "Good news, zoe: iphone-15 is back in stock at apple (5 available).")
        #expect(alert.at == Timestamp.date(from: "2026-11-21T19:41:47.834Z"))
    }
}
