import Synchronization

/// One registered observer: the observer, whom it observes, and whether it is still registered.
final class ObserverRegistration: Sendable {
    let id: UInt64
    /// The customer observed, or `nil` for every customer.
    let customer: CustomerID?
    let observer: any RestockObserver
    private let active = Atomic<Bool>(true)

    init(id: UInt64, customer: CustomerID?, observer: any RestockObserver) {
        self.id = id
        self.customer = customer
        self.observer = observer
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Marks the registration cancelled; returns whether it was active until now.
    func deactivate() -> Bool {
        active.exchange(false, ordering: .acquiringAndReleasing)
    }
}

/// The store's in-process observers, by customer, in registration order.
///
/// Thread-safe: the tables sit behind a `Mutex`. Delivery copies the registrations it needs under the
/// lock and calls them after releasing it, checking each is still active just before its call, so an
/// observer may cancel itself or others from inside a callback, and a cancelled one is skipped.
final class ObserverRegistry: Sendable {
    private struct Tables {
        var nextID: UInt64 = 1
        var byCustomer: [CustomerID: InsertionOrderedDictionary<UInt64, ObserverRegistration>] = [:]
        var everyone = InsertionOrderedDictionary<UInt64, ObserverRegistration>()
        var count = 0
    }

    private let tables = Mutex(Tables())
    private let failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?

    init(failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        self.failureHandler = failureHandler
    }

    func add(_ observer: any RestockObserver, for customer: CustomerID?) -> ObservationToken {
        let registration = tables.withLock { tables in
            defer { tables.nextID += 1 }
            let registration = ObserverRegistration(id: tables.nextID, customer: customer, observer: observer)
            if let customer {
                tables.byCustomer[customer, default: InsertionOrderedDictionary()]
                    .updateValue(registration, forKey: registration.id)
            } else {
                tables.everyone.updateValue(registration, forKey: registration.id)
            }
            tables.count += 1
            return registration
        }
        return ObservationToken(registration: registration, registry: self)
    }

    func remove(_ registration: ObserverRegistration) {
        guard registration.deactivate() else { return }
        tables.withLock { tables in
            tables.count -= 1
            guard let customer = registration.customer else {
                tables.everyone.removeValue(forKey: registration.id)
                return
            }
            tables.byCustomer[customer]?.removeValue(forKey: registration.id)
            if tables.byCustomer[customer]?.isEmpty == true { tables.byCustomer[customer] = nil }
        }
    }

    /// The number of registered observers of `customer` (excluding those of every customer).
    func count(for customer: CustomerID) -> Int {
        tables.withLock { $0.byCustomer[customer]?.count ?? 0 }
    }

    /// The number of registered observers.
    var count: Int { tables.withLock { $0.count } }

    /// Calls the observers of each alert's customer, then those of every customer, alert by alert in order.
    func deliver(_ alerts: [RestockAlert]) {
        guard !alerts.isEmpty else { return }
        // Snapshot under the lock, call out after: (alert index, registration) pairs in delivery order.
        let calls: [(Int, ObserverRegistration)] = tables.withLock { tables in
            guard tables.count > 0 else { return [] }
            var calls: [(Int, ObserverRegistration)] = []
            for (index, alert) in alerts.enumerated() {
                tables.byCustomer[alert.customer]?.forEachValue { calls.append((index, $0)) }
                tables.everyone.forEachValue { calls.append((index, $0)) }
            }
            return calls
        }
        for (index, registration) in calls where registration.isActive {
            do {
                try registration.observer.restockAlertRaised(alerts[index])
            } catch {
                failureHandler?(error, alerts[index])
            }
        }
    }
}
