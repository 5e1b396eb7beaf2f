import Foundation
import RestockCore
import RestockPipeline

/// Values of the store's contract that RestockPipeline gives no initializer outside its module — a report
/// (``StoreReport``) and a dead letter's entry (``DeadLetterList/Entry``) — made by decoding what the contract says they
/// encode to (docs/contract.md, "Reports", "Dead letters"): the one way to make them here without changing the seam.
enum ContractValues {
    /// One SKU's figures, as ``StoreReport/SKUFigures`` encodes them.
    struct SKUFigures: Codable {
        var sku: String
        var watching: Int
        var waiting: Int
        var alertsRaised = StoreReport.Window(life: 0, last24h: 0)
        var alertsAcknowledged = StoreReport.Window(life: 0, last24h: 0)
    }

    /// A report, as ``StoreReport`` encodes it.
    private struct Report: Encodable {
        var store = ""
        var id: String?
        var at = ""
        var customers: Int
        var watches: Int
        var alertsRaised: StoreReport.Window
        var alertsAcknowledged: StoreReport.Window
        var skus: [SKUFigures]
    }

    /// The report of `customers` customers with a watch and the figures of each SKU (by name): the totals are the sums of
    /// the SKUs', listed in SKU order; a sum that would overflow stops at `Int.max` (RestockPipeline's `ReportFigures`).
    static func report(customers: Int, skus: [String: SKUFigures]) throws -> StoreReport {
        let list = skus.values.sorted { $0.sku < $1.sku }
        func total(_ value: (SKUFigures) -> Int) -> Int { list.reduce(0) { sum($0, value($1)) } }
        let report = Report(
            customers: customers, watches: total(\.watching),
            alertsRaised: StoreReport.Window(life: total(\.alertsRaised.life), last24h: total(\.alertsRaised.last24h)),
            alertsAcknowledged: StoreReport.Window(life: total(\.alertsAcknowledged.life), last24h: total(\.alertsAcknowledged.last24h)),
            skus: list)
        return try JSONDecoder().decode(StoreReport.self, from: JSONEncoder().encode(report))
    }

    /// `a + b`, or the bound it passed when it overflows.
    static func sum(_ a: Int, _ b: Int) -> Int {
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? .min : .max) : result
    }

    /// A dead letter's entry, as ``DeadLetterList/Entry`` encodes it.
    private struct Entry: Encodable {
        var id: Int64
        var topic: String
        var payload: String?
        var payloadBase64: String
        var size: Int
        var retained: Bool
        var reason: String
        var failedAt: String
    }

    /// The entry of `request`, set aside for `reason` at `failedAt` (seconds since 1970).
    static func deadLetter(_ request: JournaledRequest, reason: String, failedAt: Double) throws -> DeadLetterList.Entry {
        let entry = Entry(
            id: request.seq, topic: request.topic, payload: String(validating: request.payload, as: UTF8.self),
            payloadBase64: Data(request.payload).base64EncodedString(), size: request.size, retained: request.retained,
            reason: reason, failedAt: Timestamp.string(from: Date(timeIntervalSince1970: failedAt)))
        return try JSONDecoder().decode(DeadLetterList.Entry.self, from: JSONEncoder().encode(entry))
    }
}
