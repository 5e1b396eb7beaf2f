import RestockCore
import RestockPipeline
import SeededRandom
import Testing

/// The sessions' client ids (docs/contract.md, "Sessions and client ids"), held against a plain reference: a client
/// id read back into its prefix, store and customer, by splitting at `:` and writing `~` back as `.`.
@Suite("Client ids for every identifier")
struct ClientIDSchemeTests {
    /// The plain reference: the parts a listening session's client id names.
    func readBack(_ clientID: String) -> [String] {
        clientID.split(separator: ":", omittingEmptySubsequences: false).map { String($0.map { $0 == "~" ? "." : $0 }) }
    }

    /// Characters NATS refuses in a client id ("identifier rejected"), found by trying each on nats-server 2.15.
    let refusedByNATS: Set<Character> = [".", "*", ">", " "]

    /// A random valid identifier, with many dots (`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`).
    func identifier(_ random: inout SplitMix64) -> String {
        let first = Array("Aa0z9"), rest = Array("a.b._-.0.Z")
        let length = Int.random(in: 0...8, using: &random)
        return String(first.randomElement(using: &random)!) + String((0..<length).map { _ in rest.randomElement(using: &random)! })
    }

    @Test("no two (store, customer) pairs share a listening client id, NATS accepts each, and each reads back to its pair (failed before: j.doe's id held a '.')")
    func injectiveAndAccepted() throws {
        var random = SplitMix64(seed: 25)
        var owners: [String: [String]] = [:]
        for _ in 0..<20_000 {
            let (store, customer) = (try StoreID(identifier(&random)), try CustomerID(identifier(&random)))
            let id = SessionClientIDs.listening(customer, at: store)
            #expect(!id.contains(where: refusedByNATS.contains), "\(id)")
            #expect(readBack(id) == ["restock", store.rawValue, customer.rawValue], "\(id)")
            let pair = [store.rawValue, customer.rawValue]
            if let other = owners[id] { #expect(other == pair, "\(id) names both \(other) and \(pair)") }
            owners[id] = pair
            #expect(readBack(SessionClientIDs.store(store)) == ["restock", store.rawValue])
        }
        #expect(owners.count > 10_000)
    }

    @Test("ids without a '.' are those of before, so their sessions carry on; a dotted customer's id of before is named for the migration")
    func undottedUnchanged() throws {
        let (apple, alice, dotted) = (try StoreID("apple"), try CustomerID("alice"), try CustomerID("j.doe"))
        #expect(SessionClientIDs.listening(alice, at: apple) == "restock:apple:alice")
        #expect(SessionClientIDs.store(apple) == "restock:apple")
        #expect(SessionClientIDs.legacyListening(alice, at: apple) == nil)
        #expect(SessionClientIDs.listening(dotted, at: apple) == "restock:apple:j~doe")
        #expect(SessionClientIDs.legacyListening(dotted, at: apple) == "restock:apple:j.doe")
        #expect(SessionClientIDs.store(try StoreID("shop.eu")) == "restock:shop~eu")
    }
}
