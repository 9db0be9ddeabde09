import Foundation

/// The table printed at the end of `get` and `demo`: one row per requested URL, then totals (for a long
/// `get`, the failed rows only: `writeSummary`).
struct SummaryTable {
    /// What one row shows, without the image or the bytes: `get` keeps one per URL for the whole run,
    /// so it is small (text cells only).
    struct Row: Sendable {
        var index: Int
        var ok: Bool
        var cells: [String]
        var byteCount: Int
        /// The URL as text (a `URL` object costs several times its text).
        var url: String

        /// The row for `outcome`.
        init(_ outcome: DownloadOutcome) {
            let image = outcome.imageInfo
            var result = outcome.saveError == nil ? "ok" : "not saved"
            if outcome.partial && !outcome.allowsPartial { result = "partial" }
            if let error = outcome.error { result = "\(error.code.description) \(error.code.rawValue)" }
            index = outcome.index
            ok = outcome.ok
            byteCount = outcome.byteCount
            url = outcome.url.redactedString
            cells = [
                String(outcome.index + 1), result, outcome.status.map { String($0) } ?? "-", outcome.httpVersion ?? "-",
                image?.format.rawValue ?? "-", image.map { "\($0.width)x\($0.height)" } ?? "-",
                image.map { String($0.frameCount) } ?? "-", Format.bytes(outcome.byteCount),
                String(outcome.milliseconds), outcome.cacheStatus?.rawValue ?? "-", outcome.note,
            ]
        }
    }

    var rows: [Row]
    /// Adds the demo's "note" column.
    var showsNotes = false
    /// Prints URLs as paths only (the demo's URLs all share one host).
    var pathsOnly = false

    init(rows: [Row], showsNotes: Bool = false, pathsOnly: Bool = false) {
        self.rows = rows
        self.showsNotes = showsNotes
        self.pathsOnly = pathsOnly
    }

    init(outcomes: [DownloadOutcome], showsNotes: Bool = false, pathsOnly: Bool = false) {
        self.init(rows: outcomes.map(Row.init), showsNotes: showsNotes, pathsOnly: pathsOnly)
    }

    /// The aligned table and the totals line.
    func render() -> String {
        var text = ""
        write { text += $0 }
        return text
    }

    /// Hands the table to `output` line by line (each with its newline), so a table of 10,000 rows is
    /// never one string.
    func write(_ output: (String) -> Void) {
        writeRows(output)
        output(totals + "\n")
    }

    /// The header, the rule and the rows, aligned.
    private func writeRows(_ output: (String) -> Void) {
        var header = ["#", "result", "status", "http", "format", "size", "frames", "bytes", "ms", "cache"]
        if showsNotes { header.append("note") }
        header.append(pathsOnly ? "path" : "url")
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in cells(row).enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ") + "\n"
        }
        output(line(header))
        output(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n")
        for row in rows { output(line(cells(row))) }
    }

    /// What `get` prints at the end: the whole table for a short run (up to `fullTableRows` rows); for a
    /// longer one, whose every row was already printed as it finished, the count of each result and a
    /// table of the failed rows only (the first `failedRows` of them, then how many more), then the
    /// totals. Two thousand URLs with five failures print about a dozen lines, not two thousand more.
    func writeSummary(fullTableRows: Int = 20, failedRows: Int = 100, _ output: (String) -> Void) {
        guard rows.count > fullTableRows else { return write(output) }
        var counts: [String: Int] = [:]
        for row in rows { counts[row.cells[1], default: 0] += 1 }
        let ordered = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        output("results: " + ordered.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + "\n")
        let failed = rows.filter { !$0.ok }
        if !failed.isEmpty {
            output("\nfailed:\n")
            var shown = self
            shown.rows = Array(failed.prefix(failedRows))
            shown.writeRows(output)
            if failed.count > failedRows {
                output("… and \(failed.count - failedRows) more failed (--json prints every result)\n")
            }
        }
        output(totals + "\n")
    }

    private func cells(_ row: Row) -> [String] {
        var cells = Array(row.cells.prefix(10))
        if showsNotes { cells.append(row.cells[10]) }
        cells.append(pathsOnly ? Self.pathAndQuery(row.url) : row.url)
        return cells
    }

    /// "12 downloads: 10 ok, 2 failed, 1.2 MB".
    var totals: String {
        let failed = rows.filter { !$0.ok }.count
        let bytes = rows.reduce(0) { $0 + $1.byteCount }
        return "\(rows.count) downloads: \(rows.count - failed) ok, \(failed) failed, \(Format.bytes(bytes))"
    }

    /// The path and query of `url`, still percent-encoded.
    static func pathAndQuery(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }
}
