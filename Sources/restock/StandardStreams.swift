#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes to standard output and standard error with `write(2)`, never Foundation's `FileHandle.write`, which traps
/// when the other end of a pipe has gone (found by an outside trial: a refused `restock serve … 2>&1 | head -3` died
/// of SIGILL). A line that cannot be written is dropped: what reads it is gone.
enum StandardStreams {
    /// Writes `line` and a newline to standard output at once, unbuffered, so a pipe sees each alert as it arrives.
    static func printLine(_ line: String) { write(line + "\n", to: STDOUT_FILENO) }

    /// Writes `line` and a newline to standard error.
    static func printError(_ line: String) { write(line + "\n", to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBufferPointer { buffer in
            var written = 0
            while written < buffer.count {
                #if canImport(Glibc)
                let result = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                #else
                let result = Darwin.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                #endif
                if result > 0 { written += result } else if result < 0, errno == EINTR { continue } else { return }
            }
        }
    }
}
