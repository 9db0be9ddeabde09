import ArgumentParser
import Configuration
import Foundation
import WebImageProxy

/// imgproxy's `IMGPROXY_*` environment variables, read through swift-configuration's environment provider
/// and parsed in imgproxy's own formats (`config/configurators`): Go's `strconv.ParseBool` booleans, whole
/// numbers, megapixels as a decimal, comma-separated lists and hex key lists, `format=quality` pairs and
/// `host:port` addresses. An empty variable counts as unset, as in imgproxy.
///
/// imgproxy skips a value it cannot parse and keeps its default; here a malformed value is a
/// `ValidationError` naming the variable, so `webimage serve` does not start on a configuration it did not
/// understand.
///
/// ```swift
/// let environment = ImgproxyEnvironment(ProcessInfo.processInfo.environment)
/// let quality = try environment.integer("QUALITY", in: 1...100)  // IMGPROXY_QUALITY
/// ```
struct ImgproxyEnvironment {
    /// The names after `IMGPROXY_` that `webimage serve` reads; any other `IMGPROXY_*` variable is reported
    /// by `unread` (a misspelt name must not pass silently). imgproxy's deprecated names that it still reads
    /// (`ENABLE_WEBP_DETECTION`, `ENABLE_AVIF_DETECTION`, `READ_TIMEOUT`) are here too, and
    /// `ENABLE_JXL_DETECTION` by analogy.
    static let names: Set<String> = [
        "KEY", "SALT", "SIGNATURE_SIZE", "SECRET", "BIND", "TTL", "TIMEOUT", "WORKERS", "REQUESTS_QUEUE_SIZE",
        "QUALITY", "FORMAT_QUALITY", "AUTO_ROTATE", "STRIP_METADATA", "KEEP_COPYRIGHT", "PRESERVE_HDR",
        "MAX_SRC_RESOLUTION",
        "MAX_SRC_FILE_SIZE", "MAX_RESULT_DIMENSION", "PRESETS", "ONLY_PRESETS", "ALLOWED_SOURCES",
        "ALLOW_LOOPBACK_SOURCE_ADDRESSES", "ALLOW_PRIVATE_SOURCE_ADDRESSES", "ALLOW_LINK_LOCAL_SOURCE_ADDRESSES",
        "AUTO_WEBP", "ENABLE_WEBP_DETECTION", "ENFORCE_WEBP", "AUTO_AVIF", "ENABLE_AVIF_DETECTION", "ENFORCE_AVIF",
        "AUTO_JXL", "ENABLE_JXL_DETECTION", "ENFORCE_JXL", "USE_ETAG", "HEALTH_CHECK_PATH",
        "LOCAL_FILESYSTEM_ROOT", "USE_S3", "S3_ENDPOINT", "S3_REGION", "BASE_URL", "FALLBACK_IMAGE_PATH",
        "FALLBACK_IMAGE_DATA", "FALLBACK_IMAGE_HTTP_CODE", "FALLBACK_IMAGE_TTL", "USE_LAST_MODIFIED",
        "CACHE_CONTROL_PASSTHROUGH", "ENABLE_CLIENT_HINTS", "WATERMARK_PATH", "WATERMARK_OPACITY",
        "ALLOW_SECURITY_OPTIONS", "PATH_PREFIX", "READ_REQUEST_TIMEOUT", "READ_TIMEOUT", "DOWNLOAD_TIMEOUT",
        "MAX_CLIENTS", "PROMETHEUS_BIND", "PROMETHEUS_NAMESPACE", "WATERMARK_URL", "WATERMARK_DATA",
        "FALLBACK_IMAGE_URL", "MAX_ANIMATION_FRAMES",
    ]

    /// The variables whose values are credentials: swift-configuration redacts them wherever it prints.
    static let secrets: Set<String> = ["IMGPROXY_KEY", "IMGPROXY_SALT", "IMGPROXY_SECRET"]

    private let reader: ConfigReader
    /// The `IMGPROXY_*` names present in the environment, sorted.
    private let present: [String]

    /// The variables of `environment` (the process's, or a test's).
    init(_ environment: [String: String]) {
        reader = ConfigReader(
            provider: EnvironmentVariablesProvider(
                environmentVariables: environment, secretsSpecifier: .specific(Self.secrets)))
        present = environment.keys.filter { $0.hasPrefix("IMGPROXY_") }.sorted()
    }

    /// The `IMGPROXY_*` variables present that `webimage serve` does not read: imgproxy settings it does not
    /// have, or misspelt names.
    var unread: [String] { present.filter { !Self.names.contains(String($0.dropFirst("IMGPROXY_".count))) } }

    /// The variable serve reads whose name is nearest `variable`'s, at most two letters away (a typo), if any.
    static func suggestion(for variable: String) -> String? {
        let name = Array(variable.dropFirst("IMGPROXY_".count))
        func distance(_ other: [Character]) -> Int {
            // Levenshtein's, one row at a time.
            var row = Array(0...other.count)
            for (index, letter) in name.enumerated() {
                var next = [index + 1]
                for (column, otherLetter) in other.enumerated() {
                    next.append(
                        min(row[column + 1] + 1, next[column] + 1, row[column] + (letter == otherLetter ? 0 : 1)))
                }
                row = next
            }
            return row[other.count]
        }
        let nearest = names.map { ($0, distance(Array($0))) }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        return nearest.flatMap { $0.1 <= 2 ? "IMGPROXY_" + $0.0 : nil }
    }

    /// `IMGPROXY_` + `name`'s value; nil when it is unset or empty.
    func text(_ name: String) -> String? {
        let value = reader.string(
            forKey: ConfigKey(["imgproxy", name.lowercased()]), isSecret: Self.secrets.contains("IMGPROXY_" + name))
        return value?.isEmpty == false ? value : nil
    }

    /// A boolean as Go's `strconv.ParseBool` reads one: `1`, `t`, `T`, `true`, `TRUE`, `True` and their
    /// `0`/`f`/`false` counterparts.
    func boolean(_ name: String) throws -> Bool? {
        guard let text = text(name) else { return nil }
        switch text {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default: throw Self.malformed(name, text, "true or false")
        }
    }

    /// A whole number within `range`.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = text(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw Self.malformed(name, text, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// imgproxy's megapixels (`MegaInt`): a decimal number of millions, as a pixel count greater than 0.
    func megapixels(_ name: String) throws -> Int? {
        guard let text = text(name) else { return nil }
        guard let value = Double(text), value > 0, value <= 1_000_000 else {
            throw Self.malformed(name, text, "a number of megapixels greater than 0, such as 16.8")
        }
        return max(1, Int(value * 1_000_000))
    }

    /// A comma-separated list, each item trimmed (imgproxy's `StringSlice`).
    func list(_ name: String) -> [String]? {
        text(name)?.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
    }

    /// imgproxy's `FORMAT_QUALITY` (`formatQualities(_:name:)`).
    func formatQualities(_ name: String) throws -> [ProxyOutputFormat: Int]? {
        try text(name).map { try Self.formatQualities($0, name: "IMGPROXY_" + name) }
    }

    /// `format=quality` pairs, comma-separated, each quality 1…100, as imgproxy's `FORMAT_QUALITY` takes
    /// them; `name` (the variable or flag) is named in the error. A format imgproxy knows but the proxy does
    /// not encode (`heic`, `gif`, …) is accepted and has no effect.
    static func formatQualities(_ text: String, name: String) throws -> [ProxyOutputFormat: Int] {
        var qualities: [ProxyOutputFormat: Int] = [:]
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let quality = Int(parts[1]), (1...100).contains(quality),
                imgproxyFormats.contains(parts[0])
            else {
                throw ValidationError(
                    "\(name) takes format=quality pairs such as webp=79,avif=63 (quality 1 to 100), got '\(item)'.")
            }
            if let format = ProxyOutputFormat(extension: parts[0]) { qualities[format] = quality }
        }
        return qualities
    }

    /// imgproxy's image type names (`imagetype.Types`).
    static let imgproxyFormats: Set<String> = [
        "jpeg", "jpg", "png", "webp", "avif", "jxl", "gif", "ico", "svg", "heic", "bmp", "tiff",
    ]

    /// imgproxy's `BIND`: `host:port`, `:port` (every address; `0.0.0.0`) or `[v6]:port`.
    func address(_ name: String) throws -> (host: String, port: Int)? {
        guard let text = text(name) else { return nil }
        guard let address = Self.address(text) else {
            throw Self.malformed(name, text, "host:port or :port, such as :8080")
        }
        return address
    }

    /// `text` read as `BIND` is; nil when it is not one.
    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    /// imgproxy's URL path settings (`URLPath`): the query and fragment cut, one leading `/`, no trailing one.
    func urlPath(_ name: String) -> String? {
        text(name).flatMap(Self.urlPath)
    }

    /// `text` as imgproxy's `URLPath` keeps it; nil when nothing is left.
    static func urlPath(_ text: String) -> String? {
        var path = text
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        if path.hasSuffix("/") { path.removeLast() }
        if !path.isEmpty, !path.hasPrefix("/") { path = "/" + path }
        return path.isEmpty ? nil : path
    }

    /// Base64 bytes (imgproxy's `…_DATA` settings), whitespace around them ignored.
    func base64(_ name: String) throws -> Data? {
        guard let text = text(name) else { return nil }
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ValidationError("IMGPROXY_\(name) must be Base64.")
        }
        return data
    }

    /// An absolute `http` or `https` URL (imgproxy's `…_URL` settings).
    func url(_ name: String) throws -> URL? {
        guard let text = text(name) else { return nil }
        guard let url = Self.httpURL(text) else { throw Self.malformed(name, text, "an http or https URL") }
        return url
    }

    /// `text` as an absolute `http` or `https` URL with a host; nil otherwise.
    static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else { return nil }
        return url
    }

    /// A detection switch from its `AUTO_` name, or imgproxy's older `ENABLE_…_DETECTION` one when the new
    /// one is unset, and its `ENFORCE_` name: enforced wins, as imgproxy's `Prefer… = Auto… || Enforce…`.
    func detection(_ format: String) throws -> FormatDetection? {
        let automatic = try boolean("AUTO_" + format) ?? boolean("ENABLE_\(format)_DETECTION")
        let enforced = try boolean("ENFORCE_" + format)
        if enforced == true { return .enforced }
        if automatic == true { return .auto }
        return automatic == nil && enforced == nil ? nil : .off
    }

    private static func malformed(_ name: String, _ value: String, _ expected: String) -> ValidationError {
        let shown = secrets.contains("IMGPROXY_" + name) ? "(hidden)" : "'\(value)'"
        return ValidationError("IMGPROXY_\(name) must be \(expected), got \(shown).")
    }
}
