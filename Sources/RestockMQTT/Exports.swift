// The topic contract — topics, requests, payloads, errors — is defined in RestockPipeline, which needs no broker and
// is not a product of its own: a library user imports RestockMQTT alone, and gets exactly these types of it (a scoped
// re-export, not the whole module).
@_exported import enum RestockPipeline.ExpiryText
@_exported import struct RestockPipeline.ForgetRequest
@_exported import struct RestockPipeline.ForgottenReport
@_exported import struct RestockPipeline.ReportRequest
@_exported import struct RestockPipeline.StoreReport
@_exported import struct RestockPipeline.DeadLetterList
@_exported import enum RestockPipeline.DeadLetterAction
@_exported import struct RestockPipeline.DeadLetterOutcome
@_exported import enum RestockPipeline.RequestDecoder
@_exported import enum RestockPipeline.RestockMQTTError
@_exported import enum RestockPipeline.SessionClientIDs
@_exported import enum RestockPipeline.StoreRequest
@_exported import enum RestockPipeline.UnsubscribeRequest
@_exported import struct RestockPipeline.ErrorReport
@_exported import struct RestockPipeline.InventoryRecord
@_exported import struct RestockPipeline.RequestRefusal
@_exported import struct RestockPipeline.RestockTopics
@_exported import enum RestockPipeline.RestockVersion
@_exported import struct RestockPipeline.StockRequest
@_exported import struct RestockPipeline.StorageError
@_exported import struct RestockPipeline.StoreClaim
@_exported import struct RestockPipeline.StoreMetric
@_exported import struct RestockPipeline.StoreStatus
@_exported import struct RestockPipeline.SubscribeRequest
@_exported import struct RestockPipeline.SubscriptionsMirror
