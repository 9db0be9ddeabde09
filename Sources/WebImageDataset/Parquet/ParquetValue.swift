/// One cell of a Parquet column: a value of the column's type, `null`, or a list of cells.
///
/// BYTE_ARRAY columns annotated UTF8/STRING read as ``string(_:)``, other BYTE_ARRAY and
/// FIXED_LEN_BYTE_ARRAY columns as ``bytes(_:)``; LIST columns (also lists of lists) as ``list(_:)``
/// whose elements may be `null`.
public enum ParquetValue: Sendable, Hashable {
    /// A missing value (an optional column, list or list element without a value).
    case null
    /// A BOOLEAN value.
    case bool(Bool)
    /// An INT32 value.
    case int32(Int32)
    /// An INT64 value.
    case int64(Int64)
    /// A FLOAT value.
    case float(Float)
    /// A DOUBLE value.
    case double(Double)
    /// A BYTE_ARRAY value annotated as UTF-8 text.
    case string(String)
    /// A BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value without a text annotation.
    case bytes([UInt8])
    /// A LIST value.
    case list([ParquetValue])

    /// `true` for ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
