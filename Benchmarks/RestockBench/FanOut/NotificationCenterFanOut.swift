import Foundation

/// Foundation's NotificationCenter with N block observers, each posted the stock event in `userInfo`.
final class NotificationCenterFanOut {
    static let kind = FanOutContender.Kind(name: "Foundation NotificationCenter") { observers, tally in
        let contender = NotificationCenterFanOut(observers: observers, tally: tally)
        return FanOutContender(name: "Foundation NotificationCenter", restock: contender.restock, soldOut: contender.soldOut)
    }
    private static let restocked = Notification.Name("restocked")
    private let center = NotificationCenter()
    private var observers: [any NSObjectProtocol] = []

    init(observers: Int, tally: FanOutCounter) {
        self.observers = (0..<observers).map { _ in
            center.addObserver(forName: Self.restocked, object: nil, queue: nil) { notification in
                tally.record(quantity: notification.userInfo?["quantity"] as? Int ?? 0)
            }
        }
    }

    deinit { for observer in observers { center.removeObserver(observer) } }

    func restock() {
        center.post(name: Self.restocked, object: nil, userInfo: ["sku": fanOutSKU.rawValue, "quantity": 1])
    }
    func soldOut() {}
}
