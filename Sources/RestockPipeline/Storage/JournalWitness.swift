import RestockCore

/// How far a store's journal goes, as the broker witnessed it (docs/contract.md, "Journal witness"), for a backend whose
/// servers can be replaced under the store: PostgreSQL, where a former primary started again on its own after a replica
/// was promoted takes writes too but lacks what the store committed on the promoted one. Nothing in that database tells
/// it apart from the promoted one; the broker's retained witness does. A store reads it before it opens its storage (a
/// standby before it takes over) and publishes it as its journal grows; the backend then uses no server that holds less.
/// Backends where the state is the store's own (SQLite in its data directory, memory) have none.
package protocol JournalWitness: Sendable {
    /// The broker's witness, retained on `topic`, says the journal of `store` goes through `seq`: no server that holds
    /// less is used (a refusal names `topic`, which an operator clears after restoring a database on purpose). `nil`:
    /// the broker retains none now, and a witness read before no longer counts (an operator cleared it; what servers
    /// showed the storage still does).
    func witnessed(_ seq: Int64?, of store: StoreID, on topic: String)

    /// How far the journal of `store` goes, as the storage last saw it on the server it uses; `nil` before.
    func place(of store: StoreID) -> Int64?
}
