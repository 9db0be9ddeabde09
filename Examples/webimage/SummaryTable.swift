import Foundation

/// The table printed at the end of `get` and `demo`: one row per requested URL, then totals.
struct SummaryTable {
    var outcomes: [DownloadOutcome]
    /// Adds the demo's "note" column.
    var showsNotes = false
    /// Prints URLs as paths only (the demo's URLs all share one host).
    var pathsOnly = false

    /// The aligned table and the totals line.
    func render() -> String {
        var header = ["#", "result", "status", "http", "format", "size", "frames", "bytes", "ms", "cache"]
        if showsNotes { header.append("note") }
        header.append(pathsOnly ? "path" : "url")
        var rows = [header]
        for outcome in outcomes {
            let image = outcome.image
            let result: String = outcome.error.map { "\($0.code.description) \($0.code.rawValue)" } ?? "ok"
            let status: String = outcome.status.map { String($0) } ?? "-"
            let http: String = outcome.httpVersion ?? "-"
            let format: String = image?.format.rawValue ?? "-"
            let size: String = image.map { "\($0.width)x\($0.height)" } ?? "-"
            let frames: String = image.map { String($0.frameCount) } ?? "-"
            let cache: String = outcome.cacheStatus?.rawValue ?? "-"
            var row: [String] = [
                String(outcome.index + 1), result, status, http, format, size, frames,
                Format.bytes(outcome.data?.count ?? 0), String(outcome.milliseconds), cache,
            ]
            if showsNotes { row.append(outcome.note) }
            row.append(pathsOnly ? Self.pathAndQuery(outcome.url) : outcome.url.absoluteString)
            rows.append(row)
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var text = ""
        for (number, row) in rows.enumerated() {
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            text += cells.joined(separator: "  ") + "\n"
            if number == 0 { text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
        }
        return text + totals + "\n"
    }

    /// "12 downloads: 10 ok, 2 failed, 1.2 MB".
    var totals: String {
        let failed = outcomes.filter { !$0.ok }.count
        let bytes = outcomes.reduce(0) { $0 + ($1.data?.count ?? 0) }
        return "\(outcomes.count) downloads: \(outcomes.count - failed) ok, \(failed) failed, \(Format.bytes(bytes))"
    }

    /// The path and query of `url`, still percent-encoded.
    static func pathAndQuery(_ url: URL) -> String {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }
}
