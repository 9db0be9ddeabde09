/// An error reading or writing a Parquet file.
///
/// The description names the column (its path in the schema, dotted) when the error belongs to one, and
/// the feature, encoding or codec it is about:
/// "column `bbox`: encoding DELTA_BINARY_PACKED is not supported".
public struct ParquetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// The file could not be opened, read or written.
        case io
        /// The bytes are not a well-formed Parquet file (truncated, bad magic, bad Thrift, inconsistent
        /// lengths or levels).
        case corrupt
        /// The file is well formed but uses something this implementation does not read (an encoding,
        /// codec, physical type or nesting).
        case unsupported
        /// A length in the file is larger than the reader's ``ParquetLimits`` allow.
        case limitExceeded
        /// The caller asked for something the file does not have (an unknown column, a row group past the
        /// end) or passed values that do not fit the schema.
        case invalidArgument
    }

    /// What went wrong, broadly.
    public let kind: Kind
    /// The dotted schema path of the column the error belongs to, if any.
    public let column: String?
    /// The reason, without the column.
    public let message: String

    /// An error of `kind` with `message`, optionally about `column`.
    public init(_ kind: Kind, _ message: String, column: String? = nil) {
        self.kind = kind
        self.message = message
        self.column = column
    }

    /// "column `path`: message", or the message alone.
    public var description: String {
        guard let column else { return message }
        return "column `\(column)`: \(message)"
    }

    /// This error attributed to `column`, unless it already names one.
    func inColumn(_ column: String) -> ParquetError {
        self.column == nil ? ParquetError(kind, message, column: column) : self
    }

    static func corrupt(_ message: String) -> ParquetError { ParquetError(.corrupt, message) }
    static func unsupported(_ message: String) -> ParquetError { ParquetError(.unsupported, message) }
}
