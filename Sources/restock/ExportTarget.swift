import Foundation
import RestockPipeline

/// Where `restock export` writes (docs/operations.md, "Exporting the watches"): standard output, or the file `--to`
/// names. A file is written aside and put in place only once the whole export is written and synced, so a failed
/// export leaves a file already there as it was (found by an outside trial: a failed run emptied it). A device or a pipe (`/dev/stdout`, a FIFO) is written directly: replacing it would take the device
/// node's place (found by the same trial, as root: `--to /dev/full` left a regular file at /dev/full). A file inside
/// the store's data directory is refused: the export writes nothing there (found by the same trial: `--to
/// DIR/store.sqlite` replaced the store's state, and its watches were lost).
struct ExportTarget {
    /// What the export writes to.
    let handle: FileHandle
    /// Its name in errors and in the closing line.
    let name: String
    /// How a file written aside is put in place; `nil` when the handle is written directly.
    private let staged: Staged?

    /// A file written aside: unnamed (`O_TMPFILE`) until it is whole, where the file system allows it, so that no kill
    /// leaves it behind (found by an outside trial: a named one stayed after SIGTERM, SIGINT, SIGKILL).
    private struct Staged {
        /// The file put in place (a symlink's target when `--to` is one).
        let final: String
        /// The name it is given beside `final` before it is renamed there; short, so that any name `final` may have
        /// still fits (found by the same trial: a `--to` of 234–255 bytes was refused as too long).
        let aside: String
        /// Whether it is unnamed until then (else it was created at `aside`).
        let unnamed: Bool
        /// The mode, owner and group it is given: those of the file it replaces, or a new file's.
        let mode: mode_t, owner: (uid_t, gid_t)?
    }

    /// Standard output.
    static let standardOutput = ExportTarget(handle: .standardOutput, name: "standard output", staged: nil)

    /// The file `path`, checked against the store's data directory `dataDirectory` (when the export reads one).
    static func file(_ path: String, dataDirectory: String?) throws(ExportFailure) -> ExportTarget {
        let shown = StoredValues.inLine(path)
        guard !path.hasSuffix("/") else { throw ExportFailure("--to \(shown) names a directory: give a file") }
        let url = try Self.followingLinks(URL(fileURLWithPath: path).standardizedFileURL, named: shown)
        let parent = url.deletingLastPathComponent()
        // By the folders' identity, not their names: a symlink, `..` or another mount of the data directory (a bind
        // mount) all lead into it (found by the outside trials).
        if let dataDirectory, FolderIdentity.isInside(url.path, folder: dataDirectory) {
            throw ExportFailure(
                "--to \(shown) is inside the store's data directory \(StoredValues.inLine(dataDirectory)), which the export only reads: write it elsewhere")
        }
        let mask = umask(0)
        umask(mask)
        var mode = 0o666 & ~mask
        var owner: (uid_t, gid_t)?
        var status = stat()
        if stat(url.path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFDIR: throw ExportFailure("--to \(shown) is a directory: give a file")
            case S_IFREG:  // replaced, keeping its mode, owner and group (found by the same trial: a file of mode 600 became 644)
                mode = status.st_mode & 0o7777
                owner = (status.st_uid, status.st_gid)
            default:  // a device, a pipe, a socket: written as it is
                let descriptor = Glibc.open(url.path, O_WRONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw ExportFailure("cannot write \(shown): \(ExportFailure.reason())") }
                return ExportTarget(handle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), name: shown, staged: nil)
            }
        }
        let aside = parent.appendingPathComponent(".restock-export-\(getpid())").path
        // O_TMPFILE (Linux's __O_TMPFILE, the same bit on x86-64 and arm64, with O_DIRECTORY): a file with no name yet.
        var descriptor = Glibc.open(parent.path, 0o20000000 | O_DIRECTORY | O_WRONLY | O_CLOEXEC, 0o600)
        let unnamed = descriptor >= 0
        if !unnamed {
            unlink(aside)  // one a killed export of this process id left
            descriptor = Glibc.open(aside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        guard descriptor >= 0 else { throw ExportFailure("cannot write \(shown): \(ExportFailure.reason())") }
        return ExportTarget(
            handle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), name: shown,
            staged: Staged(final: url.path, aside: aside, unnamed: unnamed, mode: mode, owner: owner))
    }

    /// The file `url` leads to through its symlinks, as `>` follows them: a link whose target does not exist yet leads
    /// to that target, which is made (found by an outside trial: such a link was replaced by the file, its target
    /// never made); a loop of links is refused, as the shell refuses it.
    private static func followingLinks(_ url: URL, named shown: String) throws(ExportFailure) -> URL {
        var url = url
        var link = stat()
        for _ in 0..<40 {
            guard lstat(url.path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK else { return url }
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: url.path) else {
                throw ExportFailure("cannot write \(shown): \(ExportFailure.reason())")
            }
            url = (target.hasPrefix("/") ? URL(fileURLWithPath: target) : url.deletingLastPathComponent().appendingPathComponent(target))
                .standardizedFileURL
        }
        throw ExportFailure("cannot write \(shown): \(String(cString: strerror(ELOOP)))")
    }

    /// Puts a file written in full in its place, synced first; nothing for standard output or a device.
    func commit() throws(ExportFailure) {
        guard let staged else { return }
        let descriptor = handle.fileDescriptor
        if let (uid, gid) = staged.owner { _ = fchown(descriptor, uid, gid) }  // as root; another user keeps its own
        guard fchmod(descriptor, staged.mode) == 0, fsync(descriptor) == 0 else { throw failure() }
        if staged.unnamed {
            unlink(staged.aside)
            guard linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, staged.aside, AT_SYMLINK_FOLLOW) == 0 else { throw failure() }
        }
        guard rename(staged.aside, staged.final) == 0 else { throw failure() }
        try? handle.close()
    }

    /// Removes a file not put in place: what a failed export wrote goes, and a file already at `--to` stays as it was.
    func abandon() {
        if let staged { unlink(staged.aside) }
    }

    /// `errno` as the failure to write this target, what was written aside removed.
    private func failure() -> ExportFailure {
        let failure = ExportFailure("cannot write \(name): \(ExportFailure.reason())")
        abandon()
        return failure
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
