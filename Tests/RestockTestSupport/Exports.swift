// The process, port and deadline tools live in LocalBroker, shared with the demo.
@_exported import LocalBroker
