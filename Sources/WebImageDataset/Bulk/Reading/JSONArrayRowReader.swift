import Foundation

/// Reads a `.json` input (optionally `.gz`) as img2dataset reads one with pandas' `read_json`: a JSON
/// array of objects, one per row, each object's fields its columns (pandas' `records` orientation, what
/// `DataFrame.to_json(orient="records")` writes), values of any JSON type turned into text as in a
/// `.jsonl` input.
///
/// The array is read a row at a time, never whole: each object's bytes are gathered (at most
/// `maxLineBytes`, `--max-line-bytes`, of them: an object is one row, as a line is in `.jsonl`) and
/// parsed alone. An object that is not valid JSON, an element that is not an object, a file that is not
/// an array (such as pandas' default `columns` orientation, an object of columns, which cannot be read a
/// row at a time), anything after the array and an array the file ends inside are errors naming the line
/// and the rows read before.
public final class JSONArrayRowReader: BulkRowReading {
    private enum Position {
        /// After the `[`, before the first element.
        case start
        /// After an element, before its `,` or the `]`.
        case afterElement
        /// After the `]` and the whitespace that may follow it.
        case ended
    }

    private let path: String
    private let bytes: ByteSource
    private let columns: BulkColumns
    private let maxLineBytes: Int
    private var position = Position.start
    /// The line of the next byte; the element being read starts on line `elementLine`.
    private var line = 1
    private var elementLine = 1
    /// Rows returned so far.
    public private(set) var rowsRead = 0

    /// Opens `path` (gzip-compressed when its name ends in `.gz`). Throws ``BulkInputError`` for a file
    /// that cannot be read or does not start with a JSON array.
    public init(path: String, columns: BulkColumns, maxLineBytes: Int = TextRowReader.defaultMaxLineBytes) throws {
        self.path = path
        self.columns = columns
        self.maxLineBytes = maxLineBytes
        do {
            bytes = try ByteSource(path: path, gzip: path.lowercased().hasSuffix(".gz"))
        } catch let error as ByteSourceError {
            throw BulkInputError("'\(path)' line 1: \(error.description)")
        }
        let first = try located { try nextNonSpace() }
        guard first == UInt8(ascii: "[") else {
            let found =
                if first == nil {
                    "is empty"
                } else if first == UInt8(ascii: "{") {
                    "is a JSON object (pandas' columns orientation), which cannot be read a row at a time"
                } else {
                    "does not start with '['"
                }
            throw BulkInputError(
                "'\(path)' line \(line) \(found): a .json input is an array of objects, one per row (pandas' records "
                    + "orientation, DataFrame.to_json(orient=\"records\")); a .jsonl input has one object per line")
        }
    }

    /// The next row; nil after the array's last. Throws ``BulkInputError`` naming the line (and the rows
    /// read before it) for an element that is not a JSON object, an over-long one, or a damaged file.
    public func next() throws -> BulkRow? {
        guard position != .ended else { return nil }
        var byte = try located { try nextNonSpace() }
        elementLine = line
        if byte == UInt8(ascii: "]") {
            try finish()
            return nil
        }
        if position == .afterElement {
            guard byte == UInt8(ascii: ",") else {
                throw error(byte == nil ? "the array is not closed: the file ends" : "expected ',' or ']'")
            }
            byte = try located { try nextNonSpace() }
            elementLine = line
        }
        guard let first = byte else { throw error("the array is not closed: the file ends") }
        guard first == UInt8(ascii: "{") else {
            throw error("the element is not an object (it starts with '\(Character(Unicode.Scalar(first)))')")
        }
        let element = try located { try readObject() }
        let object: [String: Any]
        switch JSONObjectRow.object(Data(element)) {
        case .success(let parsed): object = parsed
        case .failure(let failure): throw error(failure.reason)
        }
        let row = try JSONObjectRow.row(object, columns: columns) { cell in
            do {
                return try BlurBox.boxes(in: cell)
            } catch let failure as BlurBox.BoxParseError {
                throw error("box column '\(columns.boxes ?? "")': " + failure.message)
            }
        }
        position = .afterElement
        rowsRead += 1
        return row
    }

    /// After the `]`: only whitespace may follow.
    private func finish() throws {
        position = .ended
        if try located({ try nextNonSpace() }) != nil {
            throw error("text follows the array's closing ']'")
        }
    }

    /// The error `reason` at the element being read.
    private func error(_ reason: String) -> BulkInputError {
        BulkInputError("'\(path)' line \(elementLine) (after row \(rowsRead)): \(reason)")
    }

    /// Runs `body`, turning a problem of the bytes into an error that says where it is.
    private func located<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ByteSourceError {
            throw self.error(error.description)
        }
    }

    private func read() throws -> UInt8? {
        let byte = try bytes.readByte()
        if byte == UInt8(ascii: "\n") { line += 1 }
        return byte
    }

    private func nextNonSpace() throws -> UInt8? {
        while let byte = try read() {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
            default: return byte
            }
        }
        return nil
    }

    /// The bytes of the object whose `{` was just read, up to its closing `}`: brackets are counted outside
    /// strings, so the parser, not this scan, judges whether they match.
    private func readObject() throws -> [UInt8] {
        var object: [UInt8] = [UInt8(ascii: "{")]
        var depth = 1
        var inString = false
        var escaped = false
        while depth > 0 {
            guard let byte = try read() else {
                throw error("the object that starts here is not closed: the file ends inside it")
            }
            object.append(byte)
            if object.count > maxLineBytes {
                throw error("the object is longer than --max-line-bytes (\(maxLineBytes) bytes)")
            }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return object
    }
}
