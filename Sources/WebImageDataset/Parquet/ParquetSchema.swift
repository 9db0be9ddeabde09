/// The type of a top-level Parquet column as this reader presents it.
public indirect enum ParquetColumnType: Sendable, Hashable, CustomStringConvertible {
    /// BOOLEAN.
    case bool
    /// INT32 (also with INT_8/INT_16/DATE and similar annotations, read as the stored integer).
    case int32
    /// INT64 (also with TIMESTAMP and similar annotations, read as the stored integer).
    case int64
    /// FLOAT.
    case float
    /// DOUBLE.
    case double
    /// BYTE_ARRAY annotated UTF8/STRING (or ENUM, JSON).
    case string
    /// BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY without a text annotation.
    case bytes
    /// A LIST (or a bare repeated field) of `element`; `elementNullable` when elements may be `null`.
    case list(element: ParquetColumnType, elementNullable: Bool)
    /// A column this reader cannot read (a struct, a map, INT96); reading it throws with `reason`.
    case unsupported(reason: String)

    /// The type as written in errors and logs, e.g. `list<list<double?>?>`.
    public var description: String {
        switch self {
        case .bool: "bool"
        case .int32: "int32"
        case .int64: "int64"
        case .float: "float"
        case .double: "double"
        case .string: "string"
        case .bytes: "bytes"
        case .list(let element, let nullable): "list<\(element)\(nullable ? "?" : "")>"
        case .unsupported(let reason): "unsupported (\(reason))"
        }
    }
}

/// A top-level column of a Parquet file.
public struct ParquetColumn: Sendable, Hashable {
    /// The column's name (its top-level field name).
    public let name: String
    /// The column's type.
    public let type: ParquetColumnType
    /// `true` when the column itself may be `null`.
    public let isNullable: Bool

    /// A column description (used to describe the columns a ``ParquetWriter`` writes).
    public init(name: String, type: ParquetColumnType, isNullable: Bool) {
        self.name = name
        self.type = type
        self.isNullable = isNullable
    }
}

/// The top-level columns of a Parquet file, in file order.
public struct ParquetSchema: Sendable, Hashable {
    /// The columns, in file order.
    public let columns: [ParquetColumn]

    /// A schema of `columns`.
    public init(columns: [ParquetColumn]) {
        self.columns = columns
    }

    /// The column named `name`, if any.
    public func column(named name: String) -> ParquetColumn? {
        columns.first { $0.name == name }
    }
}

/// How one top-level column's levels turn into values (its nesting, as the record assembler walks it).
indirect enum LevelShape: Sendable {
    /// A primitive; the value is present when the definition level reaches `definedLevel`.
    case leaf(definedLevel: Int)
    /// A list: `null` when `nullable` and the definition level is below `presentLevel`, empty when it is
    /// below `elementsLevel`; elements repeat at `repetitionLevel`.
    case list(nullable: Bool, presentLevel: Int, elementsLevel: Int, repetitionLevel: Int, element: LevelShape)
}

/// What the reader needs to read a top-level column: its leaf's place among the row group's column
/// chunks, its physical type and how its levels assemble.
struct ColumnPlan: Sendable {
    var column: ParquetColumn
    /// The leaf's index among the row group's column chunks (leaves in schema order).
    var leafIndex: Int
    /// The number of leaves under this top-level field (one for every readable column).
    var leafCount: Int
    /// The leaf's dotted path (for errors).
    var path: String
    var physicalType: Int
    var typeLength: Int
    var isText: Bool
    var maxDefinitionLevel: Int
    var maxRepetitionLevel: Int
    var shape: LevelShape
    /// Why the column cannot be read, if it cannot.
    var unsupported: String?
}
