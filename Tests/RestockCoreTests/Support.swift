import Foundation
import Synchronization
@testable import RestockCore

/// Builds identifiers from literals that are known to be valid.
func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
func storeID(_ raw: String = "apple") -> StoreID { try! StoreID(raw) }

/// A fixed clock, so `since` and `at` are known.
let fixedDate = Date(timeIntervalSince1970: 1_795_000_000)

func makeStore(alertsPerUnit: Int = 0) -> Store {
    try! Store(id: storeID(), alertsPerUnit: alertsPerUnit, clock: { fixedDate })
}

/// Collects values handed to it from any thread.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

/// An observer that records what it is told.
struct RecordingObserver: RestockObserver {
    let recorder = Recorder<RestockAlert>()
    func restockAlertRaised(_ alert: RestockAlert) throws { recorder.append(alert) }
}

struct ObserverFailed: Error {}
