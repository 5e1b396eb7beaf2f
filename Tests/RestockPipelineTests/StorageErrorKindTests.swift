import Foundation
import GRDB
import Testing

@testable import RestockPipeline

/// Each failure of a file has one kind, and the kind alone decides whether the store tries again (``StorageError/isRetriable``).
@Suite("Storage error kinds")
struct StorageErrorKindTests {
    static func sqlite(_ code: ResultCode) -> StorageError {
        StorageError(.write, "/data/store.sqlite", cause: DatabaseError(resultCode: code, message: "injected"))
    }

    @Test("SQLite's result codes and errno map to a kind; only unavailable, full and locked are retried")
    func kinds() {
        let cases: [(StorageError, StorageError.Kind)] = [
            (Self.sqlite(.SQLITE_FULL), .full),
            (Self.sqlite(.SQLITE_BUSY), .locked),
            (Self.sqlite(.SQLITE_LOCKED), .locked),
            (Self.sqlite(.SQLITE_READONLY), .unavailable),
            (Self.sqlite(.SQLITE_NOMEM), .unavailable),
            (Self.sqlite(.SQLITE_CORRUPT), .corrupt),
            (Self.sqlite(.SQLITE_NOTADB), .corrupt),
            (Self.sqlite(.SQLITE_CONSTRAINT), .corrupt),
            (StorageError.system(.write, "/data/journal.sqlite", errno: ENOSPC), .full),
            (StorageError.system(.write, "/data/journal.sqlite", errno: EDQUOT), .full),
            (StorageError.system(.open, "/data/journal.sqlite", errno: EIO), .unavailable),
            (StorageError.system(.open, "/data/journal.sqlite", errno: EROFS), .unavailable),
            (StorageError.system(.open, "/data/journal.sqlite", errno: EAGAIN), .locked),
            (StorageError.system(.open, "/data/journal.sqlite", errno: ENOTDIR), .corrupt),
            (StorageError.leaseLost("/data/store.sqlite", owner: "0123456789ab", epoch: 3), .leaseLost),
        ]
        for (error, kind) in cases {
            #expect(error.kind == kind, "\(error)")
            #expect(error.isRetriable == [.unavailable, .full, .locked].contains(kind), "\(error)")
        }
    }

    @Test("a lost lease names the new owner and its epoch in one line")
    func leaseLostLine() {
        let error = StorageError.leaseLost("/data/store.sqlite", owner: "0123456789ab", epoch: 3)
        #expect(error.leaseLost == StorageError.LeaseLost(owner: "0123456789ab", epoch: 3))
        #expect(error.description.contains("0123456789ab") && error.description.contains("epoch 3"), "\(error)")
        #expect(!error.description.contains("\n"))
        #expect(!error.isDiskFull && error.errno == nil)
    }
}
