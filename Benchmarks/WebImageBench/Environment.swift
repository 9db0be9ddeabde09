import CBenchCodecs
import Foundation
import WebImage

#if canImport(Glibc)
    import Glibc
#endif

/// The machine and the versions a report was measured with.
struct Environment {
    var date: String
    var machine: [(String, String)]
    var versions: [(String, String)]

    /// The 1-minute load average (other work on the machine skews wall-clock numbers, not CPU counts).
    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
            .joined(separator: " ") ?? "?"
    }

    static func capture(loadAtStart: String) -> Environment {
        func shell(_ script: String) -> String {
            runChild(["sh", "-c", script]).stdout.split(separator: "\n").first.map { String($0).trimmed } ?? "?"
        }
        let formatter = ISO8601DateFormatter()
        let machine: [(String, String)] = [
            ("CPU", shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-")),
            ("cores (nproc)", shell("nproc")),
            ("memory", shell("awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo")),
            ("OS", shell(". /etc/os-release && echo \"$PRETTY_NAME\"")),
            ("kernel", shell("uname -sr")),
            ("load average (1, 5, 15 min) at start / end", loadAtStart + " / " + loadAverage()),
        ]
        let versions: [(String, String)] = [
            ("Swift", shell("swift --version 2>&1 | grep -m1 'Swift version'")),
            ("libcurl (linked)", LibraryVersions.curl + " (" + LibraryVersions.curlTLS + ")"),
            ("curl (CLI)", shell("curl --version | head -n1 | cut -d' ' -f1-3")),
            ("nginx", shell("nginx -v 2>&1 | cut -d/ -f2")),
            ("libjpeg-turbo", LibraryVersions.jpeg),
            ("libpng", LibraryVersions.png),
            ("libwebp", LibraryVersions.webp),
            ("libheif", String(cString: wi_bench_heif_version())),
            (
                "WebImage",
                LibraryVersions.webImage + " at " + shell("git rev-parse --short HEAD 2>/dev/null || echo unknown")
            ),
        ]
        return Environment(date: formatter.string(from: Date()), machine: machine, versions: versions)
    }
}
