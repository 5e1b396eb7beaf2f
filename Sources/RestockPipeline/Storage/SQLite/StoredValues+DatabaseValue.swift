import GRDB

extension StoredValues {
    /// A value of a row left out, for the line that names it: text as ``described(_:)`` writes it, other values as GRDB
    /// does (`NULL`, the number, `Data(N bytes)`).
    static func described(_ value: DatabaseValue) -> String {
        if case .string(let text) = value.storage { return described(text) }
        return value.description
    }
}
