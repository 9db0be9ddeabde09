import Foundation

/// A region of an image to blur (a face, a licence plate): `[x0, y0, x1, y1]` as fractions of the
/// image's width and height, the top-left corner first (img2dataset's `bbox_col`).
public struct BlurBox: Sendable, Hashable {
    /// The left edge, 0…1.
    public var x0: Double
    /// The top edge, 0…1.
    public var y0: Double
    /// The right edge, 0…1.
    public var x1: Double
    /// The bottom edge, 0…1.
    public var y1: Double

    /// The box from `x0` to `x1` across and `y0` to `y1` down.
    public init(x0: Double, y0: Double, x1: Double, y1: Double) {
        self.x0 = x0
        self.y0 = y0
        self.x1 = x1
        self.y1 = y1
    }

    /// The boxes a cell holds: a list of `[x0, y0, x1, y1]` lists of numbers (a Parquet LIST of LISTs,
    /// a JSON array of arrays in JSON Lines, or that JSON as text: in CSV and TSV, and in a JSON Lines
    /// string or a Parquet text column). `null`, an empty cell
    /// and an empty list are no boxes. Throws a description of what is wrong for anything else.
    static func boxes(in cell: BoxCell) throws -> [BlurBox] {
        switch cell {
        case .null: return []
        case .text(let text):
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed != "null" else { return [] }
            guard let data = trimmed.data(using: .utf8),
                let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            else { throw BoxParseError("'\(trimmed.prefix(80))' is not JSON") }
            return try boxes(in: .json(value))
        case .json(let value):
            if value is NSNull { return [] }
            if let text = value as? String { return try boxes(in: .text(text)) }
            guard let list = value as? [Any] else { throw BoxParseError("not a list of boxes") }
            return try list.map { item throws in
                guard let numbers = item as? [Any], numbers.count == 4 else {
                    throw BoxParseError("a box is not a list of four numbers [x0, y0, x1, y1]")
                }
                return try box(
                    numbers.map { number throws in
                        switch number {
                        case let value as Double: return value
                        case let value as Int: return Double(value)
                        case let value as NSNumber: return value.doubleValue
                        default: throw BoxParseError("a box holds something other than a number")
                        }
                    })
            }
        case .parquet(let value):
            if value.isNull { return [] }
            if let text = value.stringValue { return try boxes(in: .text(text)) }
            guard let list = value.listValue else { throw BoxParseError("not a list of boxes") }
            return try list.map { item throws in
                guard let numbers = item.listValue, numbers.count == 4 else {
                    throw BoxParseError("a box is not a list of four numbers [x0, y0, x1, y1]")
                }
                return try box(
                    numbers.map { number throws in
                        guard let value = number.doubleValue ?? number.integerValue.map(Double.init) else {
                            throw BoxParseError("a box holds something other than a number")
                        }
                        return value
                    })
            }
        }
    }

    private static func box(_ numbers: [Double]) throws -> BlurBox {
        guard numbers.allSatisfy(\.isFinite) else { throw BoxParseError("a box holds a number that is not finite") }
        return BlurBox(x0: numbers[0], y0: numbers[1], x1: numbers[2], y1: numbers[3])
    }

    /// A cell of the box column, as each reader has it.
    enum BoxCell {
        case null
        case text(String)
        case json(Any)
        case parquet(ParquetValue)
    }

    /// Why a cell is not a list of boxes.
    struct BoxParseError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }
}
