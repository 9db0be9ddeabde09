import Foundation

/// The row of one JSON object: a `.jsonl` line, or an element of a `.json` array. The URL, caption and
/// digest are text (a value of another JSON type as its JSON); a kept column's value keeps its JSON type (an
/// array or object as its JSON text, a missing key as null), which ``BulkColumnType`` then settles for the
/// whole column; the box column keeps its JSON.
enum JSONObjectRow {
    /// The object `bytes` hold; nil with the parser's reason when they are not one JSON object.
    static func object(_ bytes: Data) -> Result<[String: Any], JSONObjectRowError> {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])
        } catch {
            return .failure(JSONObjectRowError("not valid JSON (\(error.localizedDescription))"))
        }
        guard let object = parsed as? [String: Any] else {
            return .failure(JSONObjectRowError("a JSON \(kind(of: parsed)), not an object of columns"))
        }
        return .success(object)
    }

    /// The row of `object` under `columns`; `boxes` reads the box column's cell, saying where it is when it
    /// is not a list of boxes.
    static func row(
        _ object: [String: Any], columns: BulkColumns, boxes: (BlurBox.BoxCell) throws -> [BlurBox]
    ) throws -> BulkRow {
        func value(_ name: String?) -> String? {
            guard let name, let value = object[name], !(value is NSNull) else { return nil }
            if let text = value as? String { return text }
            if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) {
                return String(decoding: data, as: UTF8.self)
            }
            return "\(value)"
        }
        return BulkRow(
            url: value(columns.url) ?? "", caption: value(columns.caption),
            saved: columns.saved.map { BulkColumnValue(name: $0, value: typed(object[$0])) },
            boxes: try boxes(columns.boxes.flatMap { object[$0] }.map { .json($0) } ?? .null),
            expectedHash: value(columns.verifyHash))
    }

    /// A kept cell with its JSON type. Foundation's parser gives a truth value as an `NSNumber` whose type
    /// code is `c`; a number past the int64 range is a double.
    private static func typed(_ value: Any?) -> BulkValue {
        switch value {
        case nil, is NSNull: return .null
        case let text as String: return .string(text)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c": return .bool(number.boolValue)
            case "d", "f", "Q": return .double(number.doubleValue)
            default: return .int(number.int64Value)
            }
        default:
            let data = try? JSONSerialization.data(withJSONObject: value as Any, options: [.fragmentsAllowed])
            return .string(data.map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
    }

    private static func kind(of value: Any) -> String {
        switch value {
        case is [Any]: "array"
        case is String: "string"
        case is NSNull: "null"
        case is NSNumber: "number or boolean"
        default: "value"
        }
    }
}

/// Why some bytes are not a JSON object; the reader adds where they are.
struct JSONObjectRowError: Error {
    let reason: String

    init(_ reason: String) { self.reason = reason }
}
