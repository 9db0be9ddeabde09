import Foundation

/// `local:///path` sources: files under one directory, imgproxy's `IMGPROXY_LOCAL_FILESYSTEM_ROOT`.
///
/// The source's path is read below `root` and nowhere else:
/// - it is percent-decoded once (as any URL path), then `.` and `..` segments are resolved as imgproxy
///   resolves them, inside the path (`/a/../b.jpg` is `/b.jpg`); a `..` that would climb above the root is
///   refused (403), as is a NUL byte;
/// - the resulting file's real path, symbolic links resolved, must still be below the root's real path, so
///   a link inside the root that points outside it is refused (403) too;
/// - it must be a regular file (404 otherwise, and for a path that does not exist).
///
/// The check and the read are two steps: someone who can write inside the root can swap a checked file for
/// a link between them. The root is for images the operator publishes, not for a folder strangers write to.
struct LocalFileSource: Sendable {
    /// The root's real path, without a trailing `/` (`/` itself is refused).
    let root: String

    /// The source for `root`; nil when it is not an existing directory (or is `/`).
    init?(root: String) {
        guard let real = Self.realPath(root), real != "/" else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        self.root = real
    }

    static let outsideRoot = ProxyError.forbidden("the local source path leaves the local filesystem root")
    static let notFound = ProxyError(status: 404, "the source image was not found")

    /// The `file://` URL `source` (a `local:///…` URL) reads, checked as the type's documentation says.
    func fileURL(for source: URL) throws(ProxyError) -> URL {
        let path = source.path(percentEncoded: false)
        guard !path.contains("\0") else { throw Self.notFound }
        var segments: [Substring] = []
        for segment in path.split(separator: "/") {
            switch segment {
            case ".": continue
            case "..":
                guard !segments.isEmpty else { throw Self.outsideRoot }
                segments.removeLast()
            default: segments.append(segment)
            }
        }
        guard !segments.isEmpty else { throw Self.notFound }
        let candidate = root + "/" + segments.joined(separator: "/")
        guard let real = Self.realPath(candidate) else { throw Self.notFound }
        guard real.hasPrefix(root + "/") else { throw Self.outsideRoot }
        var status = stat()
        guard stat(real, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw Self.notFound }
        return URL(filePath: real)
    }

    /// `path` with every symbolic link, `.` and `..` resolved; nil when it does not exist.
    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
