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
        return ObservationToken(registration: registration, registry: self)
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
        // Alerts are lent to observers straight from the array, not copied for each call.
        alerts.withUnsafeBufferPointer { alerts in
            deliver(count: alerts.count, observers: { index, table in table[alerts[index].customer] }) { index, call in
                call(alerts[index])
            }
        }
    }

    /// Calls the observers of each alert of `outcome` as ``deliver(_:)-([RestockAlert])`` does, building each alert
    /// only when someone observes its customer, one at a time: no array of alerts is made.
    package func deliver(_ outcome: StockOutcome) {
        deliver(count: outcome.alertCount, observers: { index, table in outcome.entry(forCustomerOf: index, in: table) }) {
            index, call in call(outcome.alert(at: index))
        }
    }

    /// Delivery over `count` alerts: `observers` finds the observers of alert `index`'s customer in the table it is
    /// given; `lend` hands alert `index` to the body it is given, once, and only for an alert someone observes.
    @inline(__always)
    private func deliver(
        count: Int, observers: (Int, [CustomerID: [ObserverRegistration]]) -> [ObserverRegistration]?,
        lend: (Int, (RestockAlert) -> Void) -> Void
    ) {
        guard count > 0, let (byCustomer, everyone) = tables.withLock({ $0.count > 0 ? ($0.byCustomer, $0.everyone) : nil })
        else { return }
        for index in 0..<count {
            let forCustomer = byCustomer.isEmpty ? nil : observers(index, byCustomer)
            guard forCustomer != nil || !everyone.isEmpty else { continue }
            lend(index) { alert in
                if let forCustomer { call(forCustomer, with: alert) }
                call(everyone, with: alert)
            }
        }
    }

    private func call(_ registrations: [ObserverRegistration], with alert: RestockAlert) {
        for registration in registrations where registration.isActive {
            do {
                try registration.observer.restockAlertRaised(alert)
            } catch {
                failureHandler?(error, alert)
            }
        }
    }
}
