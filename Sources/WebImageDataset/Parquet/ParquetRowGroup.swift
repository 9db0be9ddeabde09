/// The values of some columns of one row group, column by column.
public struct ParquetRowGroup: Sendable {
    /// The columns read, in the order asked for.
    public let columns: [ParquetColumn]
    /// One array per column, each with ``rowCount`` values.
    public let values: [[ParquetValue]]
    /// The number of rows.
    public let rowCount: Int

    /// The values of the column named `name`, if it was read.
    public func column(named name: String) -> [ParquetValue]? {
        columns.firstIndex { $0.name == name }.map { values[$0] }
    }

    /// The value at `row` of the `column`th column read (both must be in range, as for an array).
    public func value(row: Int, column: Int) -> ParquetValue {
        values[column][row]
    }

    /// Row `index` (in `0..<rowCount`), one value per column read.
    public func row(_ index: Int) -> [ParquetValue] {
        values.map { $0[index] }
    }
}
