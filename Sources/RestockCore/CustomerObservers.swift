/// A ``Store``'s in-process observers, kept with its state under the store's one lock, so that an alert finds its
/// customer's observers by the slot its watch carries — an array index — instead of hashing the customer's id
/// (docs/benchmarks.md, "B1, the in-process fan-out"). A ``StoreView``'s ``ObserverRegistry`` keeps the same tables,
/// and looks each alert's slot up by its customer.
///
/// A customer is given a slot with their first observer and gives it back with their last; slot 0 is no one's. The
/// state stamps a customer's slot on each of their watches when it is given, on each new watch while it is held, and
/// clears it when it is given back (``StoreState``), so a watch's slot always names its own customer's observers.
struct CustomerObservers: Sendable {
    /// Each slot's observers, in registration order; slot 0 has none.
    private(set) var bySlot: [[ObserverRegistration]] = [[]]
    /// Observers of every customer, in registration order.
    private(set) var everyone: [ObserverRegistration] = []
    /// The number of registered observers.
    private(set) var count = 0
    private var slotOfCustomer: [CustomerID: UInt32] = [:]
    private var freeSlots: [UInt32] = []
    private var nextID: UInt64 = 1

    /// The customers holding a slot, and their slots.
    var slots: [CustomerID: UInt32] { slotOfCustomer }

    /// The slot of `customer`'s observers; 0 when they have none. Free while no customer has an observer.
    func slot(of customer: CustomerID) -> UInt32 {
        slotOfCustomer.isEmpty ? 0 : slotOfCustomer[customer] ?? 0
    }

    /// The number of observers of `customer` (those of every customer not counted).
    func count(for customer: CustomerID) -> Int {
        let slot = slot(of: customer)
        return slot == 0 ? 0 : bySlot[Int(slot)].count
    }

    /// Registers `observer` of `customer` (`nil`: of every customer); returns the registration and, when the customer
    /// was given a slot by it, that slot, for the state to stamp on their watches.
    mutating func add(_ observer: any RestockObserver, for customer: CustomerID?) -> (ObserverRegistration, newSlot: UInt32?) {
        defer { nextID += 1 }
        count += 1
        let registration = ObserverRegistration(id: nextID, customer: customer, observer: observer)
        guard let customer else {
            everyone.append(registration)
            return (registration, nil)
        }
        if let slot = slotOfCustomer[customer] {
            bySlot[Int(slot)].append(registration)
            return (registration, nil)
        }
        let slot: UInt32
        if let free = freeSlots.popLast() {
            slot = free
            bySlot[Int(slot)] = [registration]
        } else {
            // A slot per customer observed at once: far below 2^32 in any process.
            slot = UInt32(bySlot.count)
            bySlot.append([registration])
        }
        slotOfCustomer[customer] = slot
        return (registration, slot)
    }

    /// Unregisters `registration`, already deactivated; returns its customer and slot when it was the customer's last
    /// observer, for the state to clear from their watches (the slot is free again).
    mutating func remove(_ registration: ObserverRegistration) -> (customer: CustomerID, slot: UInt32)? {
        count -= 1
        guard let customer = registration.customer else {
            everyone.removeAll { $0 === registration }
            return nil
        }
        guard let slot = slotOfCustomer[customer] else { return nil }
        bySlot[Int(slot)].removeAll { $0 === registration }
        guard bySlot[Int(slot)].isEmpty else { return nil }
        slotOfCustomer[customer] = nil
        freeSlots.append(slot)
        return (customer, slot)
    }

    /// The tables a delivery reads after the lock is released (two references, nothing copied), or `nil` when no one
    /// observes.
    var delivery: ObserverDelivery? { count == 0 ? nil : ObserverDelivery(bySlot: bySlot, everyone: everyone) }
}

/// One delivery of alerts to a store's observers, over the tables as they were when the alerts were raised. Each
/// registration is checked to be still active just before its call, so an observer may cancel itself or others from
/// inside a callback, and a cancelled one is skipped.
struct ObserverDelivery {
    let bySlot: [[ObserverRegistration]]
    let everyone: [ObserverRegistration]

    /// Calls the observers of each alert of `outcome`, alert by alert in order: its customer's first, then those of
    /// every customer. An alert is made only when someone observes it, one at a time: no array of alerts. An error an
    /// observer throws goes to `failureHandler`.
    func deliver(_ outcome: StockOutcome, failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        for index in 0..<outcome.alertCount {
            let slot = Int(outcome.observerSlot(at: index))
            guard slot != 0 || !everyone.isEmpty else { continue }
            deliver(outcome.alert(at: index), slot: slot, failureHandler: failureHandler)
        }
    }

    /// Calls the observers of slot `slot` (0: none), then those of every customer, with `alert`.
    func deliver(_ alert: RestockAlert, slot: Int, failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        if slot != 0 { bySlot[slot].notify(alert, failureHandler: failureHandler) }
        everyone.notify(alert, failureHandler: failureHandler)
    }
}

extension [ObserverRegistration] {
    /// Calls each registration still active with `alert`; an error goes to `failureHandler` and stops no other.
    func notify(_ alert: RestockAlert, failureHandler: (@Sendable (any Error, RestockAlert) -> Void)?) {
        for registration in self where registration.isActive {
            do {
                try registration.observer.restockAlertRaised(alert)
            } catch {
                failureHandler?(error, alert)
            }
        }
    }
}
