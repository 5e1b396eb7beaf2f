import Foundation
import RestockCore

/// The alerts one stock change raised, kept in the outbox as one record instead of one row per alert:
/// what they share (store, SKU, quantity, time) once, then a line per alert (sequence, customer, position).
/// The publisher rebuilds each alert from it — same id, same JSON — as it sends them.
///
/// A restock that reaches 100,000 customers then commits one row of a few MB, not 100,000 rows.
package struct AlertBatch: Sendable, Hashable {
    /// The store that raised them.
    package let store: StoreID
    /// The SKU whose stock changed.
    package let sku: SKU
    /// The on-hand quantity after the change.
    package let quantity: Int
    /// When the stock changed.
    package let at: Date
    /// The epoch of the store that raised them (``RestockCore/Store/alertEpoch``), part of each id.
    package let epoch: String?
    /// (sequence, customer, position) of each alert, in the order they are published.
    package let entries: [Entry]

    /// What one alert of the batch has of its own.
    package struct Entry: Sendable, Hashable {
        /// The alert's sequence number (its id, with the store's).
        package let sequence: UInt64
        /// The customer alerted.
        package let customer: CustomerID
        /// The position of the customer's watch.
        package let position: UInt64
    }

    /// The batch of `alerts`, which must all be a store's own (see ``RestockAlert/sequence``) from one stock change.
    package init?(_ alerts: [RestockAlert]) {
        guard let first = alerts.first else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(alerts.count)
        for alert in alerts {
            guard let sequence = alert.sequence, alert.store == first.store, alert.sku == first.sku,
                alert.quantity == first.quantity, alert.at == first.at, alert.epoch == first.epoch
            else { return nil }
            entries.append(Entry(sequence: sequence, customer: alert.customer, position: alert.position))
        }
        self.init(store: first.store, sku: first.sku, quantity: first.quantity, at: first.at, epoch: first.epoch, entries: entries)
    }

    init(store: StoreID, sku: SKU, quantity: Int, at: Date, epoch: String?, entries: [Entry]) {
        self.epoch = epoch
        self.store = store
        self.sku = sku
        self.quantity = quantity
        self.at = at
        self.entries = entries
    }

    /// How many alerts the batch holds.
    package var count: Int { entries.count }

    /// Alert `index`, as it was raised.
    package func alert(_ index: Int) -> RestockAlert {
        let entry = entries[index]
        return RestockAlert(
            store: store, epoch: epoch, sequence: entry.sequence, customer: entry.customer, sku: sku, quantity: quantity,
            position: entry.position, at: at)
    }

    /// Alert `index` as it goes out, on its customer's topic of `topics`.
    package func message(_ index: Int, topics: RestockTopics) -> AlertMessage {
        let alert = alert(index)
        return AlertMessage(topic: topics.alerts(alert.customer), payload: Array(alert.jsonData()))
    }

    /// Text lines: `store sku quantity at-bits [epoch]`, then `sequence customer position` per alert. Identifiers
    /// and epochs hold no spaces or newlines; the time is its exact bit pattern. A record without an epoch (written
    /// before epochs) reads as one.
    package func encoded() -> [UInt8] {
        var text = "\(store) \(sku) \(quantity) \(at.timeIntervalSinceReferenceDate.bitPattern)\(epoch.map { " \($0)" } ?? "")\n"
        text.reserveCapacity(text.utf8.count + entries.count * 32)
        for entry in entries {
            text += String(entry.sequence)
            text += " "
            text += entry.customer.rawValue
            text += " "
            text += String(entry.position)
            text += "\n"
        }
        return Array(text.utf8)
    }

    /// Reads what ``encoded()`` wrote; `nil` when it is not such a record.
    package init?(decoding bytes: [UInt8]) {
        let lines = bytes.split(separator: UInt8(ascii: "\n"))
        guard let header = lines.first else { return nil }
        let fields = header.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 4 || fields.count == 5, let store = try? StoreID(fields[0]), let sku = try? SKU(fields[1]),
            let quantity = Int(fields[2]), let bits = UInt64(fields[3])
        else { return nil }
        let epoch = fields.count == 5 ? fields[4] : nil
        var entries: [Entry] = []
        entries.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            let parts = line.split(separator: UInt8(ascii: " "))
            guard parts.count == 3, let sequence = UInt64(String(decoding: parts[0], as: UTF8.self)),
                let customer = try? CustomerID(String(decoding: parts[1], as: UTF8.self)),
                let position = UInt64(String(decoding: parts[2], as: UTF8.self))
            else { return nil }
            entries.append(Entry(sequence: sequence, customer: customer, position: position))
        }
        self.init(
            store: store, sku: sku, quantity: quantity, at: Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)),
            epoch: epoch, entries: entries)
    }
}
