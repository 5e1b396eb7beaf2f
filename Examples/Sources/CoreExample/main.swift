import RestockCore

let store = try Store(id: StoreID("apple"))
let alice = try CustomerID("alice")
let iphone = try SKU("iphone-15")

let inbox = store.alerts(for: alice)                                // pull: an AsyncSequence of alerts from now on
let token = store.observe(alice) { alert in print(alert.message) }  // push; cancel or release the token to stop
try store.subscribe(alice, to: iphone, mode: .every)                // .every return; .once (the default) ends with its alert
print(store.watchers(of: iphone).map(\.customer))                   // who waits, in signup order: [alice]
try store.changeStock(of: iphone, .set(5))                          // prints "Good news, alice: iphone-15 is back…"
for await alert in inbox.prefix(1) { print(alert.quantity) }        // 5: the inbox was made before the restock
token.cancel()
