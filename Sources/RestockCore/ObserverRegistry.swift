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

/// A ``StoreView``'s in-process observers: the tables a ``Store`` keeps with its state (``CustomerObservers``), here
/// behind a lock of their own.
///
/// Delivery takes the tables under the lock, with each alert's slot — two references and the slots, nothing else
/// copied — and calls the observers after releasing it, checking each is still active just before its call, so an
/// observer may cancel itself or others from inside a callback, and a cancelled one is skipped. An observer added or
/// removed while a delivery runs copies the table it changes (the delivery still holds the old one); at any other time a
/// change is in place.
package final class ObserverRegistry: Sendable {
    private let observers = Mutex(CustomerObservers())
    private let failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?

    package init(failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        self.failureHandler = failureHandler
    }

    package func add(_ observer: any RestockObserver, for customer: CustomerID?) -> ObservationToken {
        let (registration, _) = observers.withLock { $0.add(observer, for: customer) }
        return ObservationToken(registration: registration, home: self)
    }

    /// The number of registered observers of `customer` (excluding those of every customer).
    package func count(for customer: CustomerID) -> Int { observers.withLock { $0.count(for: customer) } }

    /// The number of registered observers.
    package var count: Int { observers.withLock { $0.count } }

    /// Calls the observers of each alert's customer, then those of every customer, alert by alert in order.
    package func deliver(_ alerts: [RestockAlert]) {
        // A slot is given back and taken again as observers come and go: each alert's is read with the tables.
        guard !alerts.isEmpty,
            let (delivery, slots) = observers.withLock({ observers in
                observers.delivery.map { ($0, alerts.map { observers.slot(of: $0.customer) }) }
            })
        else { return }
        for (alert, slot) in zip(alerts, slots) { delivery.deliver(alert, slot: Int(slot), failureHandler: failureHandler) }
    }
}

extension ObserverRegistry: ObserverHome {
    func remove(_ registration: ObserverRegistration) {
        guard registration.deactivate() else { return }
        observers.withLock { _ = $0.remove(registration) }
    }
}

/// Where an observer is registered: what its token unregisters it from.
protocol ObserverHome: AnyObject, Sendable {
    /// Unregisters `registration`; nothing when it is no longer registered.
    func remove(_ registration: ObserverRegistration)
}
