import FuzzSupport
import Mosquitto
import RestockMQTT

// Lists of broker URLs → `BrokerSettings(url:)`, held against a plain reference: each element read on its own.
//
// Checked for every list: parsing never traps; it is accepted exactly when every element is accepted alone, no
// element is empty, all use one scheme, no broker is named twice, there are at most 64, and the elements that carry
// credentials carry the same ones; accepted, its brokers are the elements' brokers in order, and its credentials
// theirs. A refusal is one line.

/// One list: elements assembled like single URLs (or an empty one, or odd text), joined by commas.
func fuzzList(_ input: inout FuzzInput) -> CInt {
    let count = 1 + Int(input.byte() % 6)
    var elements: [String] = []
    for _ in 0..<count {
        switch input.byte() % 8 {
        case 0: elements.append(input.pick(["", " ", "mqtt://", ",", "mqtt://a:1 "]))
        case 1: elements.append(elements.last ?? "mqtt://a")
        default: elements.append(assemble(&input).0)
        }
    }
    let text = elements.joined(separator: ",")
    if showInputs { print("list \(String(reflecting: text))") }
    // The reference: every comma separates two elements, each read alone, spaces around it ignored.
    let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { trimmingSpaces(String($0)) }
    let alone = parts.map { $0.isEmpty ? nil : try? BrokerSettings(url: $0) }
    let settings: BrokerSettings
    do {
        settings = try BrokerSettings(url: text)
    } catch {
        check(!error.description.isEmpty && !error.description.contains("\n"), "the refusal of \(String(reflecting: text)) is not one line")
        let allAlone = alone.compactMap { $0 }
        let credentials = Set(allAlone.filter { $0.username != nil }.map { "\($0.username ?? "")\u{0}\($0.password ?? "\u{1}")" })
        let brokers = allAlone.map(\.broker)
        check(
            allAlone.count != parts.count || parts.count > 64 || Set(brokers.map(\.usesTLS)).count > 1 || Set(brokers).count != brokers.count
                || credentials.count > 1,
            "refused \(String(reflecting: text)), whose every element is accepted alone: \(error)")
        return 0
    }
    let brokers = alone.compactMap { $0?.broker }
    check(brokers.count == parts.count, "accepted \(String(reflecting: text)), which has an element refused alone")
    check(settings.brokers == brokers, "\(String(reflecting: text)) parsed as \(settings.brokers), its elements as \(brokers)")
    check(Set(brokers.map(\.usesTLS)).count == 1, "\(String(reflecting: text)) mixes schemes and was accepted")
    check(Set(brokers).count == brokers.count, "\(String(reflecting: text)) names a broker twice and was accepted")
    let users = alone.compactMap { $0?.username }
    check(settings.username == users.first, "\(String(reflecting: text)) parsed with user \(settings.username ?? "none")")
    return 0
}

/// The text without spaces and tabs at either end.
private func trimmingSpaces(_ text: String) -> String {
    String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
}
