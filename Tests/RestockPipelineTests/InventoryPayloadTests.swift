import Foundation
import RestockCore
import SeededRandom
import Testing

@testable import RestockPipeline

/// The inventory record's payload, written directly on a stock change's path, against the encoder every other
/// payload goes through: byte for byte the same, whatever its strings and quantity hold.
@Suite("Inventory payloads")
struct InventoryPayloadTests {
    /// Characters a string is drawn from: the identifiers' own, and everything the encoder escapes or might.
    static let alphabet: [Character] = Array("aZ09._-:+/ ") + ["\"", "\\", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "\u{2028}", "😀"]

    static func text(_ random: inout SplitMix64) -> String {
        String((0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
    }

    @Test("a record's payload is the encoder's, for 5,000 records with random strings and quantities")
    func sameAsTheEncoder() throws {
        var random = SplitMix64(seed: 35)
        var written = 0
        for _ in 0..<5_000 {
            var record = InventoryRecord(store: apple, sku: try SKU("ipad"), quantity: 0, updatedAt: Date())
            record.quantity = [Int.min, -1, 0, 7, 1_000_000_000, Int.max].randomElement(using: &random)!
            if Bool.random(using: &random) { record.store = Self.text(&random) }
            if Bool.random(using: &random) { record.sku = Self.text(&random) }
            if Bool.random(using: &random) { record.updatedAt = Self.text(&random) }
            let encoded = try Array(PayloadCoding.encoder.encode(record))
            #expect(record.payloadBytes() == encoded, "\(String(decoding: encoded, as: UTF8.self))")
            if [record.store, record.sku, record.updatedAt].allSatisfy(InventoryRecord.needsNoEscaping) { written += 1 }
        }
        // Both ways were taken, the direct one for a good share.
        #expect(written > 500 && written < 5_000)
    }

    @Test("a store's own record is written directly, and reads back as the record")
    func storesOwnRecordReadsBack() throws {
        let record = InventoryRecord(store: apple, sku: try SKU("ipad-pro_13.2"), quantity: 42, updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
        #expect([record.store, record.sku, record.updatedAt].allSatisfy(InventoryRecord.needsNoEscaping))
        #expect(try JSONDecoder().decode(InventoryRecord.self, from: Data(record.payloadBytes())) == record)
    }
}
