import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether a path lies in a folder, by the identity the file system gives each folder (its device and inode), not by
/// names: a symlink, `..`, and another mount of the same folder (a bind mount, a container's volume seen at two paths)
/// all name one folder by different paths (found by an outside trial: `restock export --to` through a bind mount of
/// the data directory replaced the store's state, which a comparison of paths let through).
package enum FolderIdentity {
    /// Whether `path` is `folder` or lies anywhere inside it. The walk up starts from the deepest part of `path` that
    /// exists, with its symlinks resolved; a `folder` that does not exist holds nothing.
    package static func isInside(_ path: String, folder: String) -> Bool {
        var own = stat()
        guard stat(folder, &own) == 0 else { return false }
        var place = URL(fileURLWithPath: path).path  // absolute
        while !FileManager.default.fileExists(atPath: place), place != "/" { place = (place as NSString).deletingLastPathComponent }
        guard let resolved = realpath(place, nil) else { return false }
        place = String(cString: resolved)
        free(resolved)
        while true {
            var status = stat()
            if stat(place, &status) == 0, status.st_dev == own.st_dev, status.st_ino == own.st_ino { return true }
            if place == "/" { return false }
            place = (place as NSString).deletingLastPathComponent
        }
    }
}
