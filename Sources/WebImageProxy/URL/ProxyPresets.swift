import Foundation

/// Named lists of processing options (imgproxy's presets): `pr:NAME` in a URL applies one where it stands,
/// and a preset named `default` applies to every request before the URL's own options.
///
/// Definitions are imgproxy's `IMGPROXY_PRESETS` items, `name=option/option/…`:
///
/// ```swift
/// let presets = try ProxyPresets(["default=q:70", "thumb=rs:fill:150:150/f:webp"])
/// let url = try ProxyURL(path: "/insecure/pr:thumb/plain/https://example.com/a.jpg", presets: presets)
/// url.options.width  // 150
/// ```
public struct ProxyPresets: Sendable, Hashable {
    /// Each preset's option segments, as written.
    private var segments: [String: [String]] = [:]

    /// No presets.
    public init() {}

    /// The presets of `definitions`, each `name=options`; blank items and items starting with `#` are
    /// skipped, as imgproxy does, and a later definition of a name replaces an earlier one.
    ///
    /// - Throws: `ProxyPresets.InvalidPreset` naming the first definition that is malformed, names an unknown
    ///   preset or has an option with a bad argument.
    public init(_ definitions: [String]) throws(InvalidPreset) {
        for definition in definitions {
            let text = definition.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            let parts = text.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2 else { throw InvalidPreset(name: text, reason: "it is not name=options") }
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { throw InvalidPreset(name: text, reason: "the name is empty") }
            guard !value.isEmpty else { throw InvalidPreset(name: name, reason: "it has no options") }
            let options = value.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if let bare = options.first(where: { !$0.contains(":") }) {
                throw InvalidPreset(name: name, reason: "\"\(bare)\" is not an option (name:arguments)")
            }
            segments[name] = options
        }
        // Checked once all are known, so a preset may name one defined after it.
        for name in segments.keys.sorted() {
            var options = ProcessingOptions()
            do throws(ProxyError) {
                try apply([name], to: &options)
            } catch {
                throw InvalidPreset(name: name, reason: error.message)
            }
        }
    }

    /// The preset names, sorted.
    public var names: [String] { segments.keys.sorted() }

    /// Whether a `default` preset exists.
    var hasDefault: Bool { segments["default"] != nil }

    /// Applies the presets `names` in order. A preset already being applied (one naming itself, directly
    /// or through others) is skipped, as imgproxy skips it, so a cycle ends.
    ///
    /// - Throws: `ProxyError` 400 naming an unknown preset, or an option of a preset with a bad argument.
    func apply(_ names: [String], to options: inout ProcessingOptions, applying: [String] = []) throws(ProxyError) {
        for name in names {
            guard let list = segments[name] else { throw .badRequest("unknown preset \"\(name)\"") }
            guard !applying.contains(name) else { continue }
            options.presets.append(name)
            for segment in list {
                try ProxyURL.apply(segment[...], to: &options, presets: self, applying: applying + [name])
            }
        }
    }

    /// A preset definition `ProxyPresets` refused.
    public struct InvalidPreset: Error, Sendable, CustomStringConvertible {
        /// The preset's name (the whole item when it has none).
        public var name: String
        /// Why.
        public var reason: String

        /// `preset "NAME": REASON`.
        public var description: String { "preset \"\(name)\": \(reason)" }
    }
}
