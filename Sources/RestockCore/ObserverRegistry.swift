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

/// A ``StoreView``'s in-process observers, by customer, in registration order (a ``Store`` keeps its own with its
/// state: ``CustomerObservers``).
///
/// Thread-safe: the tables sit behind a `Mutex`. A customer's observers are one array, a value: delivery takes the
/// tables under the lock — two references, nothing copied — and calls the observers after releasing it, checking each
/// is still active just before its call, so an observer may cancel itself or others from inside a callback, and a
/// cancelled one is skipped. An observer added or removed while a delivery runs copies the table it changes (the
/// delivery still holds the old one); at any other time a change is in place.
package final class ObserverRegistry: Sendable {
    private struct Tables {
        var nextID: UInt64 = 1
        var byCustomer: [CustomerID: [ObserverRegistration]] = [:]
        var everyone: [ObserverRegistration] = []
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
                tables.byCustomer[customer, default: []].append(registration)
            } else {
                tables.everyone.append(registration)
            }
            tables.count += 1
            return registration
        }
        return ObservationToken(registration: registration, home: self)
    }

    func remove(_ registration: ObserverRegistration) {
        guard registration.deactivate() else { return }
        tables.withLock { tables in
            tables.count -= 1
            guard let customer = registration.customer else {
                tables.everyone.removeAll { $0 === registration }
                return
            }
            guard let index = tables.byCustomer.index(forKey: customer) else { return }
            tables.byCustomer.values[index].removeAll { $0 === registration }
            if tables.byCustomer.values[index].isEmpty { tables.byCustomer.remove(at: index) }
        }
    }

    /// The number of registered observers of `customer` (excluding those of every customer).
    package func count(for customer: CustomerID) -> Int {
        tables.withLock { $0.byCustomer[customer]?.count ?? 0 }
    }

    /// The number of registered observers.
    package var count: Int { tables.withLock { $0.count } }

    /// Calls the observers of each alert's customer, then those of every customer, alert by alert in order.
    package func deliver(_ alerts: [RestockAlert]) {
        guard !alerts.isEmpty, let (byCustomer, everyone) = tables.withLock({ $0.count > 0 ? ($0.byCustomer, $0.everyone) : nil })
        else { return }
        for alert in alerts {
            if !byCustomer.isEmpty, let forCustomer = byCustomer[alert.customer] {
                forCustomer.notify(alert, failureHandler: failureHandler)
            }
            everyone.notify(alert, failureHandler: failureHandler)
        }
    }
}

/// Where an observer is registered: what its token unregisters it from.
protocol ObserverHome: AnyObject, Sendable {
    /// Unregisters `registration`; nothing when it is no longer registered.
    func remove(_ registration: ObserverRegistration)
}

extension ObserverRegistry: ObserverHome {}
