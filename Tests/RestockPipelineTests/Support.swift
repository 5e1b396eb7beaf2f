import RestockCore
import RestockPipeline

func customer(_ raw: String) -> CustomerID { try! CustomerID(raw) }
func sku(_ raw: String) -> SKU { try! SKU(raw) }
let apple = try! StoreID("apple")
let appleTopics = try! RestockTopics(store: apple)
