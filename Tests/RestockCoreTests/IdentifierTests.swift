import Testing
@testable import RestockCore

@Suite("Identifiers")
struct IdentifierTests {
    @Test("valid identifiers are accepted", arguments: ["a", "iphone-15", "A.b_c-9", "0", String(repeating: "x", count: 64)])
    func accepts(_ raw: String) throws {
        #expect(try SKU(raw).rawValue == raw)
    }

    @Test(
        "anything outside the pattern is refused",
        arguments: [
            "", "-lead", ".lead", "_lead", "with space", "a/b", "a+b", "a#", "caf\u{E9}", "nul\u{0}x", "line\nbreak",
            String(repeating: "x", count: 65),
        ])
    func refuses(_ raw: String) {
        #expect(throws: RestockError.invalidIdentifier(kind: "SKU", value: raw)) { try SKU(raw) }
        #expect(!CustomerID.isValid(raw))
    }

    @Test("errors name the kind and give a stable code")
    func errorText() {
        let error = RestockError.invalidIdentifier(kind: CustomerKind.name, value: "a/b")
        #expect(error.code == "invalid-customer")
        #expect(error.description.hasPrefix("invalid customer id \"a/b\""))
        #expect(RestockError.invalidIdentifier(kind: SKUKind.name, value: "").code == "invalid-sku")
    }
}
