import Foundation

/// The type of a kept column (``BulkColumns/saved``) of a CSV, TSV or JSON input, decided over the whole
/// file as img2dataset's reader decides it: pyarrow's CSV reader for `.csv` and `.tsv`, pyarrow's JSON
/// reader for `.jsonl`, pandas' `read_json` (then `Table.from_pandas`) for `.json`. The planning pass
/// decides it (``BulkPlan/columnTypes``); every row's cell then has it (``value(of:format:)``), so the
/// column is int64 in each shard's Parquet file and a JSON number in each record when every cell is a
/// whole number, as in img2dataset's output.
///
/// What img2dataset's readers would make a date, a time or a timestamp (`2020-01-01` in a CSV), a list or
/// a struct (a JSON array or object), stays text here; a JSON column mixing numbers and text, which
/// pyarrow and pandas refuse (img2dataset stops), is text.
public enum BulkColumnType: String, Codable, Sendable, CaseIterable {
    /// No cell has a value (pyarrow's `null` type): every cell is null.
    case null
    /// Whole numbers (int64).
    case int64
    /// Truth values.
    case bool
    /// 64-bit floating-point numbers; a cell without a number is null.
    case double
    /// Text, as the file spells it.
    case string

    /// The Parquet type of a column of this type (a `null` column is written as nullable text).
    var parquetType: ParquetColumnType {
        switch self {
        case .null, .string: .string
        case .int64: .int64
        case .bool: .bool
        case .double: .double
        }
    }

    /// `cell`, read from an input of `format`, as a value of this type. A CSV cell is its text; a JSON
    /// cell has its JSON type. A cell the type has no value for (pyarrow's null texts in a number column,
    /// a JSON null) is null.
    public func value(of cell: BulkValue, format: BulkInputFormat) -> BulkValue {
        let isCSV = format == .csv || format == .tsv
        if isCSV, case .string(let text) = cell {
            guard self != .string else { return cell }
            if self == .null || PyArrowCSVText.isNull(text) { return .null }
            switch self {
            case .int64: return PyArrowCSVText.int64(text).map { .int($0) } ?? .null
            case .bool: return PyArrowCSVText.bool(text).map { .bool($0) } ?? .null
            default: return PyArrowCSVText.double(text).map { .double($0) } ?? .null
            }
        }
        switch (self, cell) {
        case (_, .null), (.null, _): return .null
        case (.string, _): return cell.text.map { .string($0) } ?? .null
        case (.bool, .bool): return cell
        case (.int64, .int): return cell
        case (.int64, .double(let number)): return Int64(exactly: number).map { .int($0) } ?? .null
        case (.int64, .bool(let truth)): return .int(truth ? 1 : 0)
        case (.int64, .string(let text)):
            return PythonFloatText.double(text).flatMap { Int64(exactly: $0) }.map { .int($0) } ?? .null
        case (.double, .int(let number)): return .double(Double(number))
        case (.double, .double), (.double, .float): return cell
        case (.double, .bool(let truth)): return .double(truth ? 1 : 0)
        case (.double, .string(let text)): return PythonFloatText.double(text).map { .double($0) } ?? .null
        default: return .null
        }
    }
}

/// Learns the types of the kept columns of a CSV, TSV, JSON Lines or JSON input from all its rows
/// (``BulkColumnType``).
struct BulkColumnTypeInference {
    /// What a column's cells have been so far.
    private struct Column {
        /// CSV: the types every non-null cell so far can be read as (int64, bool, double, by that order).
        var csvCandidates: [BulkColumnType] = [.int64, .bool, .double]
        /// JSON: the kinds of the non-null cells so far.
        var kinds: Set<Kind> = []
        /// A cell is null (JSON null, a missing key, a CSV null text).
        var hasNull = false
        /// A cell is not null.
        var hasValue = false
        /// JSON: a number (or a numeric text, which pandas reads as one) is not whole.
        var hasFraction = false
    }

    private enum Kind { case int, double, bool, string, numericText }

    let format: BulkInputFormat
    private let names: [String]
    private var columns: [Column]

    /// The inference of `names` for an input of `format`; nil for formats whose columns carry their own
    /// types (Parquet), or carry none to keep (text, webdataset), and when no column is kept.
    init?(format: BulkInputFormat, names: [String]) {
        guard [.csv, .tsv, .jsonl, .json].contains(format), !names.isEmpty else { return nil }
        self.format = format
        self.names = names
        columns = Array(repeating: Column(), count: names.count)
    }

    /// Takes in the kept cells of `row`.
    mutating func add(_ row: BulkRow) {
        for (index, cell) in row.saved.prefix(columns.count).enumerated() {
            if format == .csv || format == .tsv {
                addCSV(cell.value, to: &columns[index])
            } else {
                addJSON(cell.value, to: &columns[index])
            }
        }
    }

    private func addCSV(_ cell: BulkValue, to column: inout Column) {
        guard case .string(let text) = cell, !PyArrowCSVText.isNull(text) else {
            column.hasNull = true
            return
        }
        column.csvCandidates.removeAll { candidate in
            switch candidate {
            case .int64: PyArrowCSVText.int64(text) == nil
            case .bool: PyArrowCSVText.bool(text) == nil
            default: PyArrowCSVText.double(text) == nil
            }
        }
        column.hasValue = true
    }

    private func addJSON(_ cell: BulkValue, to column: inout Column) {
        // pandas makes a float64 column int64 only when every value converts to an int64 and back.
        func note(_ number: Double) {
            if Int64(exactly: number) == nil { column.hasFraction = true }
        }
        if cell != .null { column.hasValue = true }
        switch cell {
        case .null: column.hasNull = true
        case .int: column.kinds.insert(.int)
        case .double(let number):
            column.kinds.insert(.double)
            note(number)
        case .float(let number):
            column.kinds.insert(.double)
            note(Double(number))
        case .bool: column.kinds.insert(.bool)
        case .string(let text):
            if let number = PythonFloatText.double(text) {
                column.kinds.insert(.numericText)
                note(number)
            } else {
                column.kinds.insert(.string)
            }
        }
    }

    /// Each kept column's type.
    var types: [String: BulkColumnType] {
        var types: [String: BulkColumnType] = [:]
        for (name, column) in zip(names, columns) where types[name] == nil {
            types[name] =
                switch format {
                case .csv, .tsv: Self.csvType(column)
                case .jsonl: Self.jsonLinesType(column)
                default: Self.pandasType(column)
                }
        }
        return types
    }

    /// pyarrow's CSV reader: null when no cell has a value, else the first of int64, bool, double that
    /// reads every cell, else text.
    private static func csvType(_ column: Column) -> BulkColumnType {
        guard column.hasValue else { return .null }
        return column.csvCandidates.first ?? .string
    }

    /// pyarrow's JSON reader: the JSON type the cells share; whole and fractional numbers together are
    /// double. (It refuses a column of numbers and text; that stays text.)
    private static func jsonLinesType(_ column: Column) -> BulkColumnType {
        let kinds = column.kinds.map { $0 == .numericText ? Kind.string : $0 }
        let set = Set(kinds)
        if set.isEmpty { return .null }
        if set == [.int] { return .int64 }
        if set.isSubset(of: [.int, .double]) { return .double }
        if set == [.bool] { return .bool }
        return .string
    }

    /// pandas' `read_json`: a column of numbers, truth values and numeric texts (Python's `float()` reads
    /// each), with nulls, becomes float64, and then int64 when every value is whole and none is null; a
    /// column of truth values alone stays bool; any other text keeps the column text. A column of nulls
    /// alone is float64 (NaN), which pyarrow writes as a double column of nulls.
    private static func pandasType(_ column: Column) -> BulkColumnType {
        let kinds = column.kinds
        if kinds == [.bool] && !column.hasNull { return .bool }
        if kinds.contains(.string) { return .string }
        return !column.hasNull && !column.hasFraction && !kinds.isEmpty ? .int64 : .double
    }
}

/// How pyarrow's CSV reader (its default `ConvertOptions`) reads a cell's text.
enum PyArrowCSVText {
    /// The texts pyarrow's CSV reader takes as null in a column that is not text.
    static let nullTexts: Set<String> = [
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "N/A", "NA",
        "NULL", "NaN", "n/a", "nan", "null",
    ]

    static func isNull(_ text: String) -> Bool { nullTexts.contains(text) }

    /// Decimal digits with an optional `-` (not `+`), or `0x` and up to 16 hexadecimal digits (their bits,
    /// so `0xFFFFFFFFFFFFFFFF` is -1), spaces and tabs around either; nil past the int64 range.
    static func int64(_ text: String) -> Int64? {
        let trimmed = trimmingBlanks(text)
        if trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X") {
            let digits = trimmed.dropFirst(2)
            guard (1...16).contains(digits.count) else { return nil }
            return UInt64(digits, radix: 16).map { Int64(bitPattern: $0) }
        }
        guard !trimmed.hasPrefix("+") else { return nil }
        return Int64(trimmed)
    }

    /// `1`, `True`, `TRUE`, `true` and `0`, `False`, `FALSE`, `false`, exactly.
    static func bool(_ text: String) -> Bool? {
        switch text {
        case "1", "True", "TRUE", "true": true
        case "0", "False", "FALSE", "false": false
        default: nil
        }
    }

    /// A decimal number with an optional sign, fraction and exponent, or `inf`/`infinity` (any case), spaces
    /// and tabs around it.
    static func double(_ text: String) -> Double? {
        let trimmed = trimmingBlanks(text)
        var body = Substring(trimmed)
        if body.first == "+" || body.first == "-" { body = body.dropFirst() }
        let lower = body.lowercased()
        if lower == "inf" || lower == "infinity" { return trimmed.hasPrefix("-") ? -.infinity : .infinity }
        if lower == "nan" { return .nan }
        guard DecimalText.isDecimal(body) else { return nil }
        return Double(trimmed)
    }

    private static func trimmingBlanks(_ text: String) -> String {
        text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
    }
}

/// Python's `float()` on a text, which pandas applies to a column of texts: a decimal number or
/// `inf`/`infinity`/`nan` (any case) with an optional sign, white space around it.
enum PythonFloatText {
    static func double(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        var body = Substring(trimmed)
        let negative = body.first == "-"
        if body.first == "+" || body.first == "-" { body = body.dropFirst() }
        switch body.lowercased() {
        case "inf", "infinity": return negative ? -.infinity : .infinity
        case "nan": return .nan
        default: break
        }
        guard DecimalText.isDecimal(body) else { return nil }
        return Double(body).map { negative ? -$0 : $0 }
    }
}

/// The shape of an unsigned decimal number: digits with an optional `.` (a digit on at least one side),
/// then an optional exponent (`e` or `E`, an optional sign, digits).
enum DecimalText {
    static func isDecimal(_ text: Substring) -> Bool {
        var scalars = text.unicodeScalars[...]
        func digits() -> Int {
            var count = 0
            while let first = scalars.first, ("0"..."9").contains(first) {
                scalars = scalars.dropFirst()
                count += 1
            }
            return count
        }
        var mantissa = digits()
        if scalars.first == "." {
            scalars = scalars.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if scalars.first == "e" || scalars.first == "E" {
            scalars = scalars.dropFirst()
            if scalars.first == "+" || scalars.first == "-" { scalars = scalars.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return scalars.isEmpty
    }
}
