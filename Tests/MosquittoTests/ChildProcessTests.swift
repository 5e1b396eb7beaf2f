import Foundation
import Glibc
import LocalBroker
import Testing

/// What a child process started by the tests (and the demo) gets of its parent's.
@Suite("Child processes")
struct ChildProcessTests {
    @Test("a child inherits none of the parent's file descriptors past standard error, so a socket closed by the parent is closed")
    func noInheritedDescriptors() async throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)  // without O_CLOEXEC, as libmosquitto's sockets are
        defer { close(ends[0]); close(ends[1]) }
        let result = try await ChildProcess.run("/bin/ls", ["/proc/self/fd"])
        let descriptors = Set(result.standardOutput.split(separator: "\n").compactMap { Int32($0) })
        #expect(!descriptors.contains(ends[0]) && !descriptors.contains(ends[1]), "the child has \(descriptors.sorted())")
        #expect(descriptors.isSuperset(of: [0, 1, 2]))
    }
}
