import Foundation
import RestockCore
import Testing

@testable import RestockPipeline

/// A standby's wait through the storage seam (``StoreStorageBackend/waitForTheOwnerToGo(of:)``), on each backend that
/// can end it without a clock: the owner's end wakes the wait with what it held, a standby of another store's storage is refused before it
/// waits, and a cancelled wait ends at once.
@Suite("Standby wait")
struct StandbyWaitTests {
    typealias Directory = PipelineTests.Directory

    /// Starts a standby's wait on `backend`; its result once the owner is gone.
    static func waiting(on backend: some StoreStorageBackend) -> Task<StandbyTakeover, any Error> {
        Task { try await backend.waitForTheOwnerToGo(of: apple) }
    }

    @Test("memory: the owner's end wakes the standby, which takes the storage with the next epoch")
    func memoryOwnerEnds() async throws {
        let backend = InMemoryStorageBackend()
        let owner = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        let wait = Self.waiting(on: backend)
        owner.releaseDirectory()
        let takeover = try await wait.value
        #expect(takeover.ownerEnded)
        _ = try backend.open(for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", takeover), now: Date())
        #expect(backend.volume.lease == (2, "bbbbbbbbbbbb"))
    }

    @Test("SQLite: the owner's end hands the standby the directory's lock, and the takeover keeps it")
    func sqliteOwnerEnds() async throws {
        let directory = Directory()
        let backend = SQLiteStorage(directory: directory.url)
        let owner = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        let wait = Self.waiting(on: backend)
        owner.ownership.release()
        owner.releaseDirectory()
        let takeover = try await wait.value
        #expect(takeover.ownerEnded && takeover.hold is DirectoryLock)
        let next = try backend.open(for: apple, claim: .takeover(instance: "bbbbbbbbbbbb", takeover), now: Date())
        #expect(next.holdsLock)
        #expect(throws: RestockMQTTError.self) { try backend.open(for: apple, claim: .exclusive(instance: "cccccccccccc"), now: Date()) }
        next.releaseDirectory()
    }

    @Test("a standby refuses another store's storage before it waits", arguments: [true, false])
    func anotherStore(memory: Bool) throws {
        let directory = Directory()
        let backend: any StoreStorageBackend = memory ? InMemoryStorageBackend() : SQLiteStorage(directory: directory.url)
        try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date()).releaseDirectory()
        #expect(throws: RestockMQTTError.self) { try backend.prepareStandby(for: StoreID("pear")) }
        try backend.prepareStandby(for: apple)
    }

    @Test("a cancelled wait ends with CancellationError", arguments: [true, false])
    func cancelled(memory: Bool) async throws {
        let directory = Directory()
        let backend: any StoreStorageBackend = memory ? InMemoryStorageBackend() : SQLiteStorage(directory: directory.url)
        let owner = try backend.open(for: apple, claim: .exclusive(instance: "aaaaaaaaaaaa"), now: Date())
        let wait = Task { try await backend.waitForTheOwnerToGo(of: apple) }
        wait.cancel()
        await #expect(throws: CancellationError.self) { _ = try await wait.value }
        owner.releaseDirectory()
    }
}
