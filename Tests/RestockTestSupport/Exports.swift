// The process, port and deadline tools live in LocalBroker, shared with the demo; the seeded generator the
// tests, the reliability run and the benchmarks replay their streams with, in SeededRandom.
@_exported import LocalBroker
@_exported import SeededRandom
