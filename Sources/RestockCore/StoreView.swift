import Dispatch
import Foundation
import Synchronization

/// A store that someone else changes, seen from inside the same process: what it holds, and its alerts once they
/// are durable (docs/embedding.md).
///
/// An embedded `StoreService` hands one out as its `store`: the local observer list, a mirror of what customers
/// asked for through the broker. It reads and observes; it has no method that changes the store, since a change
/// made here would not be in the store's journal or database, and the list would no longer mirror them. Customers
/// and the admin change it through the broker (or a `StoreClient`), as every other client does.
///
/// **Reads** (``watchers(of:)``, ``watchlist(of:)``, ``quantity(of:)``…) show each request once the store has applied
/// it, in the batch that commits it: a test waits for the change it expects, with a deadline.
///
/// **Observers** (``observe(_:_:)``, ``observeAll(_:)``, ``alerts(for:)``) are told of each alert once, after the
/// batch that raised it is committed (an alert a crash could take back is never handed out), in the order the store
/// raised them (signup order within a restock). They are called one at a time, on a serial dispatch queue of the
/// view's own (`restock.observers.{store}`), never on the store's pipeline: an observer that throws is reported to
/// the failure handler and the others still hear of the alert; one that is slow holds up only the other observers.
/// At most ``maximumPendingAlerts`` alerts wait for observers; past that, alerts are dropped for them (not for the
/// broker, which gets every one) and counted (the `dropped` handler; `restock_observer_alerts_dropped_total`).
public final class StoreView: Sendable {
    /// The most alerts that wait at once for in-process observers; see ``StoreView``.
    public static let maximumPendingAlerts = 100_000

    /// The store's identifier.
    public var id: StoreID { store.id }

    private let store: Store
    private let observers: ObserverRegistry
    private let queue: DispatchQueue
    private let pending = Atomic<Int>(0)
    private let maximumPending: Int
    private let dropped: @Sendable (Int) -> Void

    /// A view of `store`, whose owner hands over each committed batch of alerts with ``deliverCommitted(_:)``.
    /// - Parameters:
    ///   - maximumPending: How many alerts may wait for observers at once.
    ///   - dropped: Told how many alerts were dropped for observers because that many already waited.
    ///   - failed: Told of each error an observer throws.
    package init(
        of store: Store, maximumPending: Int = StoreView.maximumPendingAlerts, dropped: @escaping @Sendable (Int) -> Void = { _ in },
        failed: @escaping @Sendable (any Error, RestockAlert) -> Void = { _, _ in }
    ) {
        self.store = store
        self.maximumPending = maximumPending
        self.dropped = dropped
        self.observers = ObserverRegistry(failureHandler: failed)
        self.queue = DispatchQueue(label: "restock.observers.\(store.id)")
    }

    // MARK: Reads

    /// The on-hand quantity of a SKU.
    public func quantity(of sku: SKU) -> Int { store.quantity(of: sku) }

    /// Every SKU with stock on hand, and its quantity.
    public var inventory: [SKU: Int] { store.inventory }

    /// The watches of a SKU, in signup order.
    public func watchers(of sku: SKU) -> [Watch] { store.watchers(of: sku) }

    /// What a customer watches, in signup order.
    public func watchlist(of customer: CustomerID) -> [Watch] { store.watchlist(of: customer) }

    /// One customer's watch of one SKU.
    public func watch(_ customer: CustomerID, of sku: SKU) -> Watch? { store.watch(customer, of: sku) }

    /// The number of watches in the store.
    public var watchCount: Int { store.watchCount }

    /// The number of customers watching at least one SKU.
    public var customerCount: Int { store.customerCount }

    /// The number of watches of one customer.
    public func watchCount(of customer: CustomerID) -> Int { store.watchCount(of: customer) }

    /// Everything the store holds, as one consistent copy.
    public var snapshot: StoreSnapshot { store.snapshot }

    // MARK: Observers

    /// Registers an observer of one customer's committed alerts.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observe(_ customer: CustomerID, with observer: some RestockObserver) -> ObservationToken {
        observers.add(observer, for: customer)
    }

    /// Registers a closure for one customer's committed alerts.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observe(_ customer: CustomerID, _ handler: @escaping @Sendable (RestockAlert) throws -> Void) -> ObservationToken {
        observers.add(ClosureObserver(handler), for: customer)
    }

    /// Registers an observer of every committed alert.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observeAll(with observer: some RestockObserver) -> ObservationToken {
        observers.add(observer, for: nil)
    }

    /// Registers a closure for every committed alert.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observeAll(_ handler: @escaping @Sendable (RestockAlert) throws -> Void) -> ObservationToken {
        observers.add(ClosureObserver(handler), for: nil)
    }

    /// A customer's committed alerts from now on, as an `AsyncSequence`: make it before the restock it should see.
    public func alerts(for customer: CustomerID) -> CustomerInbox {
        CustomerInbox { observers.add($0, for: customer) }
    }

    /// The number of registered in-process observers.
    public var observerCount: Int { observers.count }

    // MARK: Delivery

    /// Hands a committed batch's alerts, in the order they were raised, to the observers: returns at once; the
    /// observers are called on the view's queue. Alerts past ``maximumPendingAlerts`` waiting are dropped and counted.
    package func deliverCommitted(_ alerts: [RestockAlert]) {
        guard !alerts.isEmpty, observers.count > 0 else { return }
        let waiting = pending.add(alerts.count, ordering: .relaxed).newValue
        let excess = min(alerts.count, max(0, waiting - maximumPending))
        let taken = alerts.count - excess
        if excess > 0 {
            pending.subtract(excess, ordering: .relaxed)
            dropped(excess)
        }
        guard taken > 0 else { return }
        let batch = excess == 0 ? alerts : Array(alerts.prefix(taken))
        queue.async { [self] in
            observers.deliver(batch)
            pending.subtract(taken, ordering: .relaxed)
        }
    }

    /// How many alerts wait for observers now.
    package var pendingAlerts: Int { pending.load(ordering: .relaxed) }
}
