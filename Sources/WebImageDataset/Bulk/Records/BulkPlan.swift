import Foundation

/// How the input is cut into shards: shard `i` holds input rows `i × shardSize ..< (i + 1) × shardSize`,
/// in input order. Written to `DIR/plan.json` on the first run; a later run checks it still describes
/// the same input (size and row count) and shard size, so the shards it skips and the ones it redoes
/// line up.
public struct BulkPlan: Codable, Equatable, Sendable {
    /// The input file's name (without its folder).
    public var input: String
    /// The input file's size in bytes (a folder of webdataset shards: its archives' together).
    public var inputBytes: Int
    /// The input's row count.
    public var rows: Int
    /// Rows per shard.
    public var shardSize: Int
    /// The number of shards.
    public var shards: Int
    /// The output format's name (`webdataset`, `files`).
    public var format: String
    /// How shards and samples are named; nil in a plan written before it was recorded, whose names are
    /// ``BulkKeyFormat/fixedWidth``'s.
    public var keyFormat: BulkKeyFormat?
    /// The kept columns' types, decided over the whole input as img2dataset's reader decides them
    /// (``BulkColumnType``), for a CSV, TSV, JSON Lines or JSON input that keeps columns; nil otherwise,
    /// and in a plan written before they were recorded, whose kept columns stay text (as its first run's).
    public var columnTypes: [String: BulkColumnType]?

    /// How this plan's shards and samples are named.
    public var keys: BulkKeyFormat { keyFormat ?? .fixedWidth }

    /// The plan for `input`: one streaming pass counts its rows (a Parquet file's used columns only, row
    /// group by row group) and, for a CSV, TSV or JSON input, learns the kept columns' types. A damaged input
    /// throws here, before anything is downloaded. Shard numbers have at least `shardDigits` digits
    /// (``BulkKeyFormat``).
    public static func make(
        input: String, columns: BulkColumns, maxLineBytes: Int, shardSize: Int, format: String, shardDigits: Int = 5
    ) throws -> BulkPlan {
        let reader = try BulkInput.open(path: input, columns: columns, maxLineBytes: maxLineBytes)
        var rows = 0
        var inference = BulkInputFormat(path: input).flatMap {
            BulkColumnTypeInference(format: $0, names: columns.saved)
        }
        if inference != nil {
            while let row = try reader.next() {
                inference?.add(row)
                rows += 1
            }
        } else {
            rows = try reader.skip(Int.max)
        }
        let size = BulkInput.size(path: input)
        return BulkPlan(
            input: URL(fileURLWithPath: input).lastPathComponent, inputBytes: size, rows: rows, shardSize: shardSize,
            shards: max(1, (rows + shardSize - 1) / shardSize), format: format,
            keyFormat: BulkKeyFormat(shardSize: shardSize, shardDigits: shardDigits), columnTypes: inference?.types)
    }

    /// `row`'s kept cells as this plan's column types have them; without recorded types (a plan written
    /// before they were), as text, as that plan's first run kept them.
    public func typed(_ row: BulkRow) -> BulkRow {
        guard let format = BulkInputFormat(fileName: input), [.csv, .tsv, .jsonl, .json].contains(format) else {
            return row
        }
        var row = row
        for index in row.saved.indices {
            let cell = row.saved[index].value
            row.saved[index].value =
                if let columnTypes {
                    columnTypes[row.saved[index].name]?.value(of: cell, format: format) ?? cell
                } else {
                    .string(cell.text ?? "")
                }
        }
        return row
    }

    /// Reads `DIR/plan.json`, or writes `plan` there; a plan already there must equal it. A plan written
    /// before the key format was recorded keeps its own naming, so a rerun names its files as the first run
    /// did.
    public static func settle(_ plan: BulkPlan, in directory: URL) throws -> BulkPlan {
        let url = directory.appendingPathComponent("plan.json")
        // Every process of a job settles the plan, so no one of them owns its temporary files: each
        // removes only those its own host's dead processes left (a kill between write and rename).
        defer { AtomicFile.removeAbandoned(in: directory, name: "plan.json") }
        if let data = try? Data(contentsOf: url) {
            guard let existing = try? JSONDecoder().decode(BulkPlan.self, from: data) else {
                throw BulkInputError("\(url.path) is not a plan this version reads; use a new output directory")
            }
            var compared = plan
            if existing.keyFormat == nil, plan.keys.shardDigits == existing.keys.shardDigits {
                compared.keyFormat = nil
            }
            if existing.columnTypes == nil { compared.columnTypes = nil }
            guard existing == compared else {
                throw BulkInputError(
                    "\(url.path) describes another input or shard size (\(existing.rows) rows of \(existing.input), "
                        + "shards of \(existing.shardSize), \(existing.format), shard numbers of "
                        + "\(existing.keys.shardDigits) digits); use a new output directory")
            }
            return existing
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(plan) + Data("\n".utf8), to: url)
        return plan
    }

    /// The shards this process runs: `--shards` when given, else those with `shard % count == index`.
    public func assigned(index: Int, count: Int, explicit: [Int]?) -> [Int] {
        if let explicit { return explicit.filter { $0 >= 0 && $0 < shards }.sorted() }
        return (0..<shards).filter { $0 % count == index }
    }
}
