import Foundation
import Synchronization

/// The subject of the Observer pattern: a store that keeps the customers waiting for sold-out SKUs and
/// alerts them, in signup order, when stock is back (docs/contract.md, "Semantics").
///
/// A `Store` is thread-safe and does no I/O. Requests change its state under one lock and return what they
/// did (an outcome), so a caller can persist and publish it; alerts also go to in-process observers
/// registered with ``observe(_:with:)`` or read through ``alerts(for:)``, after the lock is released.
public final class Store: Sendable {
    /// The largest on-hand quantity of one SKU.
    public static let maximumQuantity = 1_000_000_000
    /// The largest fair-release factor.
    public static let maximumAlertsPerUnit = 1_000_000
    /// The per-customer watch limits a store accepts.
    public static let maximumWatchesPerCustomerRange: ClosedRange<Int> = 1...1_000_000
    /// The per-customer watch limit of a store made without one: enough for a person, while one customer
    /// subscribing to every SKU cannot grow the store (and the watch list republished on each of their
    /// requests) without bound.
    public static let defaultMaximumWatchesPerCustomer = 100
    /// The store-wide watch limits a store accepts.
    public static let maximumWatchesRange: ClosedRange<Int> = 1...1_000_000_000
    /// The store-wide watch limit of a store made without one: far more than a real store holds (about 1 KB of memory and
    /// of disk each), while customers subscribing from many ids cannot grow it without bound.
    public static let defaultMaximumWatches = 10_000_000

    /// The store's identifier, the `{store}` of its topics.
    public let id: StoreID
    /// Fair release: at most this many alerts per unit of stock that arrives; 0 turns it off.
    public let alertsPerUnit: Int
    /// What every alert id carries between the store id and the sequence number: `{store}-{epoch}-{n}`. A store
    /// whose counters can go back — restored from a backup, its data removed, or a second store of the id — needs a
    /// new one each time it starts, so that no id is given to two alerts (consumers drop an id they have seen); the
    /// MQTT store passes its instance. `nil`: ids are `{store}-{n}`.
    public let alertEpoch: String?
    /// The most watches a subscribe may leave one customer with; see ``subscribe(_:to:mode:minQuantity:)``.
    public let maximumWatchesPerCustomer: Int
    /// The most watches the store holds (`nil`: no limit); see ``subscribe(_:to:mode:minQuantity:expiresAt:)``.
    public let maximumWatches: Int?

    /// The state and the in-process observers, under one lock.
    private let state: Mutex<StoreState>
    private let observerFailureHandler: (@Sendable (any Error, RestockAlert) -> Void)?
    private let clock: @Sendable () -> Date

    /// Creates a store, empty or restored from a snapshot.
    /// - Parameters:
    ///   - id: The store's identifier.
    ///   - alertsPerUnit: The fair-release factor K; 0 (the default) alerts every waiting watch. Watches a snapshot's store
    ///     held back with fair release on stay waiting, and go first on the SKU's next stock change; with fair release off
    ///     they hold no newcomer back: one the stock satisfies is alerted at once.
    ///   - maximumWatchesPerCustomer: The most watches one customer may have (1 through 1,000,000; 100 by
    ///     default). A snapshot's watches are all kept, even where a customer has more.
    ///   - maximumWatches: The most watches the store holds, all customers together (1 through 1,000,000,000; ten million
    ///     by default; `nil`: no limit). A snapshot's watches are all kept, even past it.
    ///   - snapshot: State to carry on from, as saved from ``snapshot``. It is outside input, and watches no store could
    ///     have saved are left out, silently (the storage readers name the rows they leave out): a position past
    ///     ``StoreSnapshot/maximumCounter``, a `minQuantity` outside ``RequestLimits/minQuantity``, and a second watch of
    ///     one customer and SKU (the one with the lowest position is kept). No position left out is given out again.
    ///   - alertEpoch: What every alert id carries besides the store and the sequence (see ``alertEpoch``).
    ///   - clock: Where `since` and `at` times come from.
    ///   - observerFailureHandler: Told of each error an observer throws.
    /// - Throws: ``RestockError/invalidAlertsPerUnit(_:)``, ``RestockError/invalidMaximumWatchesPerCustomer(_:)``,
    ///   ``RestockError/invalidMaximumWatches(_:)``.
    public init(
        id: StoreID, alertsPerUnit: Int = 0, maximumWatchesPerCustomer: Int = Store.defaultMaximumWatchesPerCustomer,
        maximumWatches: Int? = Store.defaultMaximumWatches, alertEpoch: String? = nil, restoring snapshot: StoreSnapshot? = nil, clock: @escaping @Sendable () -> Date = { Date() },
        observerFailureHandler: (@Sendable (any Error, RestockAlert) -> Void)? = nil
    ) throws(RestockError) {
        guard (0...Self.maximumAlertsPerUnit).contains(alertsPerUnit) else {
            throw .invalidAlertsPerUnit(alertsPerUnit)
        }
        guard Self.maximumWatchesPerCustomerRange.contains(maximumWatchesPerCustomer) else {
            throw .invalidMaximumWatchesPerCustomer(maximumWatchesPerCustomer)
        }
        if let maximumWatches, !Self.maximumWatchesRange.contains(maximumWatches) {
            throw .invalidMaximumWatches(maximumWatches)
        }
        self.maximumWatches = maximumWatches
        self.id = id
        self.alertsPerUnit = alertsPerUnit
        self.maximumWatchesPerCustomer = maximumWatchesPerCustomer
        self.alertEpoch = alertEpoch
        self.clock = clock
        self.observerFailureHandler = observerFailureHandler
        let limits = StoreState.Limits(
            alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: maximumWatchesPerCustomer, maximumWatches: maximumWatches)
        if let snapshot {
            state = Mutex(StoreState(store: id, limits: limits, alertEpoch: alertEpoch, restoring: snapshot))
        } else {
            state = Mutex(StoreState(store: id, limits: limits, alertEpoch: alertEpoch))
        }
    }

    /// Replaces the store's state with `snapshot` (a store restored after it was made: the MQTT store service
    /// restores while it connects). Observers stay registered; no alert is raised.
    package func restore(_ snapshot: StoreSnapshot) {
        let limits = StoreState.Limits(
            alertsPerUnit: alertsPerUnit, maximumWatchesPerCustomer: maximumWatchesPerCustomer, maximumWatches: maximumWatches)
        var restored = StoreState(store: id, limits: limits, alertEpoch: alertEpoch, restoring: snapshot)
        state.withLock { state in
            restored.takeObservers(from: state)
            state = restored
        }
    }

    // MARK: Requests

    /// Adds a watch, or changes the terms of an existing one, which keeps its position.
    ///
    /// When the SKU is already in stock enough to satisfy the watch, the alert is raised at once
    /// (and a `once` watch is not kept). Subscribing again on the same terms changes nothing. The watch waits instead
    /// while fair release holds earlier watches of the SKU back (it queues behind them), or once the store has given out
    /// its last alert sequence (``SubscribeOutcome/isAlertWithheld``; see ``changeStock(of:_:)``).
    ///
    /// A customer has at most ``maximumWatchesPerCustomer`` watches: a subscribe that would keep a new watch
    /// for a customer who already has that many is refused, and changes nothing (no position is taken, no
    /// alert raised). New terms for a SKU already watched are always taken. Likewise the store holds at most
    /// ``maximumWatches`` watches in all: a subscribe that would keep a new watch past it is refused
    /// (``RestockError/storeFull(watches:limit:)``) and changes nothing. A `once` watch satisfied at once
    /// is taken even at the limit: it is alerted and not kept, so it leaves the customer with no more watches
    /// than before (unless fair release holds earlier watches of the SKU back: then it would wait, and is
    /// refused).
    ///
    /// `expiresAt` is when the watch ends unalerted (``expire(_:of:at:)``); `nil`, never. New terms replace it.
    /// - Throws: ``RestockError/invalidMinQuantity(_:)``, ``RestockError/tooManyWatches(customer:watching:limit:)``,
    ///   ``RestockError/storeFull(watches:limit:)``.
    @discardableResult
    public func subscribe(
        _ customer: CustomerID, to sku: SKU, mode: WatchMode = .once, minQuantity: Int = 1, expiresAt: Date? = nil
    ) throws(RestockError) -> SubscribeOutcome {
        let now = clock()
        let (outcome, delivery) = try state.withLock { state throws(RestockError) in
            let outcome = try state.subscribe(
                customer: customer, sku: sku, mode: mode, minQuantity: minQuantity, expiresAt: expiresAt, now: now)
            // The observers are taken with the state only for an alert, and called once the lock is released.
            return (outcome, outcome.alert == nil ? nil : state.observers.delivery.map { ($0, state.observers.slot(of: customer)) })
        }
        if let alert = outcome.alert, let (observers, slot) = delivery {
            observers.deliver(alert, slot: Int(slot), failureHandler: observerFailureHandler)
        }
        return outcome
    }

    /// Removes a customer's watch of a SKU; returns it, or `nil` when there was none (not an error).
    @discardableResult
    public func unsubscribe(_ customer: CustomerID, from sku: SKU) -> Watch? {
        state.withLock { $0.unsubscribe(customer: customer, sku: sku) }
    }

    /// Ends a customer's watch of a SKU if it has expired at `now` (its ``Watch/expiresAt`` is not after it), as an
    /// unsubscribe would; returns it, or `nil` when there is no such watch or it has not expired.
    @discardableResult
    public func expire(_ customer: CustomerID, of sku: SKU, at now: Date) -> Watch? {
        state.withLock { $0.expire(customer: customer, sku: sku, now: now) }
    }

    /// Removes every watch of a customer; returns them in position order.
    @discardableResult
    public func unsubscribeAll(_ customer: CustomerID) -> [Watch] {
        state.withLock { $0.unsubscribeAll(customer: customer) }
    }

    /// Changes the on-hand stock of a SKU and raises the alerts that causes, in ascending position.
    ///
    /// Each alert takes the next sequence number, up to ``StoreSnapshot/maximumCounter``. A store that has given out
    /// that one (restored from a snapshot whose next sequence is one past it) raises no more, so that no alert id is
    /// given twice: the change is still made, and the watches it would have alerted stay waiting, counted in
    /// ``StockOutcome/alertsWithheld``.
    /// - Throws: ``RestockError`` for a negative `set` or a quantity out of range; nothing changes then.
    @discardableResult
    public func changeStock(of sku: SKU, _ change: StockChange) throws(RestockError) -> StockOutcome {
        let now = clock()
        // The observers are taken with the state, and called once the lock is released.
        let (outcome, delivery) = try state.withLock { state throws(RestockError) in
            (try state.changeStock(sku: sku, change: change, now: now), state.observers.delivery)
        }
        delivery?.deliver(outcome, failureHandler: observerFailureHandler)
        return outcome
    }

    // MARK: Queries (the pull model)

    /// The on-hand quantity of a SKU.
    public func quantity(of sku: SKU) -> Int { state.withLock { $0.quantity(of: sku) } }

    /// Every SKU with stock on hand, and its quantity.
    public var inventory: [SKU: Int] { state.withLock { $0.stockedSKUs } }

    /// The watches of a SKU, in signup order.
    public func watchers(of sku: SKU) -> [Watch] { state.withLock { $0.watchers(of: sku) } }

    /// What a customer watches, in signup order.
    public func watchlist(of customer: CustomerID) -> [Watch] { state.withLock { $0.watchlist(of: customer) } }

    /// One customer's watch of one SKU.
    public func watch(_ customer: CustomerID, of sku: SKU) -> Watch? {
        state.withLock { $0.watch(customer: customer, sku: sku) }
    }

    /// The number of watches in the store.
    public var watchCount: Int { state.withLock { $0.watchCount } }

    /// The number of customers watching at least one SKU.
    public var customerCount: Int { state.withLock { $0.customerCount } }

    /// The number of watches of one customer, in O(1).
    public func watchCount(of customer: CustomerID) -> Int { state.withLock { $0.watchCount(of: customer) } }

    /// The position the next new watch takes and the sequence number of the next alert, which a durable
    /// store saves with each change: each at most one past ``StoreSnapshot/maximumCounter`` (none left).
    public var counters: (nextPosition: UInt64, nextAlertSequence: UInt64) {
        state.withLock { ($0.nextPosition, $0.nextAlertSequence) }
    }

    /// Everything needed to restore this store later.
    public var snapshot: StoreSnapshot { state.withLock { $0.snapshot } }

    // MARK: Observers (the push model)

    /// Registers an observer of one customer's alerts.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observe(_ customer: CustomerID, with observer: some RestockObserver) -> ObservationToken {
        add(observer, for: customer)
    }

    /// Registers a closure for one customer's alerts.
    public func observe(
        _ customer: CustomerID, _ handler: @escaping @Sendable (RestockAlert) throws -> Void
    ) -> ObservationToken {
        add(ClosureObserver(handler), for: customer)
    }

    /// Registers an observer of every alert the store raises.
    public func observeAll(with observer: some RestockObserver) -> ObservationToken {
        add(observer, for: nil)
    }

    /// Registers a closure for every alert the store raises.
    /// - Returns: The token that keeps it registered; cancel or release it to unregister.
    public func observeAll(_ handler: @escaping @Sendable (RestockAlert) throws -> Void) -> ObservationToken {
        add(ClosureObserver(handler), for: nil)
    }

    /// A customer's alerts from now on, as an `AsyncSequence`.
    public func alerts(for customer: CustomerID) -> CustomerInbox {
        CustomerInbox { add($0, for: customer) }
    }

    /// The number of registered in-process observers.
    public var observerCount: Int { state.withLock { $0.observers.count } }

    /// The number of registered in-process observers of one customer.
    public func observerCount(for customer: CustomerID) -> Int { state.withLock { $0.observers.count(for: customer) } }

    private func add(_ observer: any RestockObserver, for customer: CustomerID?) -> ObservationToken {
        let registration = state.withLock { $0.addObserver(observer, for: customer) }
        return ObservationToken(registration: registration, home: self)
    }
}

extension Store: ObserverHome {
    func remove(_ registration: ObserverRegistration) {
        guard registration.deactivate() else { return }
        state.withLock { $0.removeObserver(registration) }
    }
}
