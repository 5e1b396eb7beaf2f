import Testing
@testable import RestockCore

@Suite("Stock set and add")
struct StockTests {
    @Test("set makes the quantity exactly N")
    func set() throws {
        let store = makeStore()
        try store.changeStock(of: sku("ipad"), .set(7))
        #expect(store.quantity(of: sku("ipad")) == 7)
        try store.changeStock(of: sku("ipad"), .set(2))
        #expect(store.quantity(of: sku("ipad")) == 2)
    }

    @Test("add moves the quantity and never goes below zero")
    func add() throws {
        let store = makeStore()
        let outcome = try store.changeStock(of: sku("ipad"), .add(3))
        #expect(outcome.previousQuantity == 0 && outcome.quantity == 3)
        try store.changeStock(of: sku("ipad"), .add(-1))
        #expect(store.quantity(of: sku("ipad")) == 2)
        let floored = try store.changeStock(of: sku("ipad"), .add(-10))
        #expect(floored.quantity == 0)
        #expect(store.quantity(of: sku("ipad")) == 0)
    }

    @Test("a negative set or an overflow is refused and changes nothing")
    func refused() throws {
        let store = makeStore()
        try store.changeStock(of: sku("ipad"), .set(5))
        #expect(throws: RestockError.stockChangeOutOfRange(field: "set", value: "-1")) { try store.changeStock(of: sku("ipad"), .set(-1)) }
        #expect(throws: RestockError.self) { try store.changeStock(of: sku("ipad"), .add(.max)) }
        #expect(throws: RestockError.self) { try store.changeStock(of: sku("ipad"), .set(Store.maximumQuantity + 1)) }
        #expect(store.quantity(of: sku("ipad")) == 5)
    }
}
