import Foundation

/// Where `restock export` writes (docs/operations.md, "Exporting the watches"): standard output, or the file `--to`
/// names. A file is written beside its place under a name of its own and put in place only once the whole export is
/// written and synced, so a failed export leaves a file already there as it was (found by an outside trial: a failed
/// run emptied it). A device or a pipe (`/dev/stdout`, a FIFO) is written directly: replacing it would take the device
/// node's place (found by the same trial, as root: `--to /dev/full` left a regular file at /dev/full). A file inside
/// the store's data directory is refused: the export writes nothing there (found by the same trial: `--to
/// DIR/store.sqlite` replaced the store's state, and its watches were lost).
struct ExportTarget {
    /// What the export writes to.
    let handle: FileHandle
    /// Its name in errors and in the closing line.
    let name: String
    /// The file written, put at `final` by ``commit()``; `nil` when the handle is written directly.
    private let staged: (path: String, final: String)?

    /// Standard output.
    static let standardOutput = ExportTarget(handle: .standardOutput, name: "standard output", staged: nil)

    /// The file `path`, checked against the store's data directory `dataDirectory` (when the export reads one).
    static func file(_ path: String, dataDirectory: String?) throws(ExportFailure) -> ExportTarget {
        guard !path.isEmpty else { throw ExportFailure("--to is empty: give the file to write") }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let parent = url.deletingLastPathComponent()
        if let dataDirectory {
            let data = URL(fileURLWithPath: dataDirectory).resolvingSymlinksInPath().path
            let places = [parent.resolvingSymlinksInPath().path, url.resolvingSymlinksInPath().deletingLastPathComponent().path]
            if places.contains(where: { $0 == data || $0.hasPrefix(data.hasSuffix("/") ? data : data + "/") }) {
                throw ExportFailure("--to \(path) is inside the store's data directory \(dataDirectory), which the export only reads: write it elsewhere")
            }
        }
        var status = stat()
        if stat(url.path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFDIR: throw ExportFailure("--to \(path) is a directory: give a file")
            case S_IFREG: break
            default:  // a device, a pipe, a socket: written as it is
                let descriptor = Glibc.open(url.path, O_WRONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw ExportFailure("cannot write \(path): \(ExportFailure.reason())") }
                return ExportTarget(handle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), name: path, staged: nil)
            }
        }
        let staging = parent.appendingPathComponent(".\(url.lastPathComponent).restock-export-\(getpid())").path
        unlink(staging)  // one a killed export of this process id left
        let descriptor = Glibc.open(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ExportFailure("cannot write \(path): \(ExportFailure.reason())") }
        return ExportTarget(handle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), name: path, staged: (staging, url.path))
    }

    /// Puts a file written in full in its place, synced first; nothing for standard output or a device.
    func commit() throws(ExportFailure) {
        guard let staged else { return }
        do {
            try handle.synchronize()
            try handle.close()
        } catch {
            abandon()
            throw ExportFailure("cannot write \(name): \(ExportFailure.reason(error))")
        }
        guard rename(staged.path, staged.final) == 0 else {
            let reason = ExportFailure.reason()
            abandon()
            throw ExportFailure("cannot write \(name): \(reason)")
        }
    }

    /// Removes a file not put in place: what a failed export wrote goes, and a file already at `--to` stays as it was.
    func abandon() {
        if let staged { unlink(staged.path) }
    }
}

/// A failed export, in one line (exit status 1: not a usage error).
struct ExportFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }

    /// `errno`'s text.
    static func reason() -> String { String(cString: strerror(errno)) }

    /// The POSIX reason under a Foundation error of a write (`No space left on device`), or the error itself.
    static func reason(_ error: any Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let posix = underlying ?? (error as NSError?), posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return "\(error)"
    }
}
