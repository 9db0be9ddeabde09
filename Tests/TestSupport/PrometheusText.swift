/// Reads `/metrics` as `webimage serve` and the proxy expose it.
package enum PrometheusText {
    /// The samples of a Prometheus text exposition: `name{labels}` → value.
    package static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
