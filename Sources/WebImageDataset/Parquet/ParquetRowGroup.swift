/// The values of some columns of one row group, column by column.
///
/// A column is kept as the file has it, where it can be: a dictionary-encoded column as its dictionary
/// and a 4-byte index per row, so a row group of 2^25 rows repeating a few values takes 128 MiB, not
/// a ``ParquetValue`` per row. ``value(row:column:)`` reads one cell; ``values`` and ``row(_:)`` build
/// the cells they return.
public struct ParquetRowGroup: Sendable {
    /// The columns read, in the order asked for.
    public let columns: [ParquetColumn]
    /// The number of rows.
    public let rowCount: Int
    private let storage: [ParquetColumnValues]

    init(columns: [ParquetColumn], storage: [ParquetColumnValues], rowCount: Int) {
        self.columns = columns
        self.storage = storage
        self.rowCount = rowCount
    }

    /// One array per column, each with ``rowCount`` values. Builds every cell: for a large row group,
    /// ``value(row:column:)`` reads one at a time.
    public var values: [[ParquetValue]] { storage.map(\.all) }

    /// The values of the column named `name`, if it was read.
    public func column(named name: String) -> [ParquetValue]? {
        columns.firstIndex { $0.name == name }.map { storage[$0].all }
    }

    /// The value at `row` of the `column`th column read (both must be in range, as for an array).
    public func value(row: Int, column: Int) -> ParquetValue {
        storage[column].value(row)
    }

    /// Row `index` (in `0..<rowCount`), one value per column read.
    public func row(_ index: Int) -> [ParquetValue] {
        storage.map { $0.value(index) }
    }
}

/// One column's values in a row group: its distinct entries and, per row, which entry it holds.
struct ParquetColumnValues: Sendable {
    /// The row index of a null.
    static let null = UInt32.max

    /// The entries the rows point to; row `i` itself when ``rows`` is nil.
    var entries: [ParquetValue]
    /// The index in ``entries`` of each row's value, ``null`` for a null; nil when row `i` is entry `i`.
    var rows: [UInt32]?

    /// The value of `row`.
    func value(_ row: Int) -> ParquetValue {
        guard let rows else { return entries[row] }
        let index = rows[row]
        return index == Self.null ? .null : entries[Int(index)]
    }

    /// Every row's value.
    var all: [ParquetValue] {
        guard let rows else { return entries }
        return rows.map { $0 == Self.null ? .null : entries[Int($0)] }
    }
}
