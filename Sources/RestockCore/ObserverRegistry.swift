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
package final class ObserverRegistry: Sendable {
    /// One customer's observers. A class, so finding them for an alert costs one reference, not a copy of the table.
    private final class CustomerObservers {
        var registrations = InsertionOrderedDictionary<UInt64, ObserverRegistration>()
    }

    private struct Tables {
        var nextID: UInt64 = 1
        var byCustomer: [CustomerID: CustomerObservers] = [:]
        var everyone = InsertionOrderedDictionary<UInt64, ObserverRegistration>()
        var count = 0
    }

    private let tables = Mutex(Tables())
    private let failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?

    package init(failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        self.failureHandler = failureHandler
    }

    package func add(_ observer: any RestockObserver, for customer: CustomerID?) -> ObservationToken {
        let registration = tables.withLock { tables in
            defer { tables.nextID += 1 }
            let registration = ObserverRegistration(id: tables.nextID, customer: customer, observer: observer)
            if let customer {
                let observers = tables.byCustomer[customer] ?? CustomerObservers()
                observers.registrations.updateValue(registration, forKey: registration.id)
                tables.byCustomer[customer] = observers
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
            guard let observers = tables.byCustomer[customer] else { return }
            observers.registrations.removeValue(forKey: registration.id)
            if observers.registrations.isEmpty { tables.byCustomer[customer] = nil }
        }
    }

    /// The number of registered observers of `customer` (excluding those of every customer).
    package func count(for customer: CustomerID) -> Int {
        tables.withLock { $0.byCustomer[customer]?.registrations.count ?? 0 }
    }

    /// The number of registered observers.
    package var count: Int { tables.withLock { $0.count } }

    /// Calls the observers of each alert's customer, then those of every customer, alert by alert in order.
    package func deliver(_ alerts: [RestockAlert]) {
        guard !alerts.isEmpty else { return }
        // Snapshot under the lock, call out after: for each call, the alert's index and the registration.
        var indices: [Int] = []
        var registrations: [ObserverRegistration] = []
        tables.withLock { tables in
            guard tables.count > 0 else { return }
            indices.reserveCapacity(alerts.count)
            registrations.reserveCapacity(alerts.count)
            for index in alerts.indices {
                tables.byCustomer[alerts[index].customer]?.registrations.forEachValue {
                    indices.append(index)
                    registrations.append($0)
                }
                tables.everyone.forEachValue {
                    indices.append(index)
                    registrations.append($0)
                }
            }
        }
        // Alerts are lent to observers straight from the array, not copied for each call.
        alerts.withUnsafeBufferPointer { alerts in
            for (index, registration) in zip(indices, registrations) where registration.isActive {
                do {
                    try registration.observer.restockAlertRaised(alerts[index])
                } catch {
                    failureHandler?(error, alerts[index])
                }
            }
        }
    }
}
