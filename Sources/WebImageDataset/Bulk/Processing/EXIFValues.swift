/// One decoded value of a numeric EXIF field, as exifread holds it.
enum EXIFValue: Equatable {
    /// BYTE, SHORT, LONG, their signed kinds, UNDEFINED and IFD.
    case integer(Int)
    /// RATIONAL and SRATIONAL, as read (exifread reduces them when it prints them).
    case ratio(Int, Int)
    /// FLOAT and DOUBLE (a FLOAT widened), which exifread keeps as a one-element tuple.
    case float(Double)
    /// One character of an ASCII field, where exifread takes its first value.
    case character(Character)

    /// The IFD offset this value names when exifread follows it: a whole number; nil for one exifread
    /// passes over (it cannot seek to it). A ratio with a zero denominator raises there.
    func offset() throws(EXIFSummary.Raised) -> Int? {
        switch self {
        case .integer(let value): return value
        case .ratio(_, 0): throw EXIFSummary.Raised()
        case .ratio, .float, .character: return nil
        }
    }

    /// Python's `str()` (and `repr()`, the same for these) of the value.
    var text: String {
        switch self {
        case .integer(let value): return String(value)
        case .ratio(let numerator, let denominator):
            guard let reduced = Self.reduced(numerator, denominator) else { return "\(numerator)/\(denominator)" }
            return reduced.denominator == 1 ? String(reduced.numerator) : "\(reduced.numerator)/\(reduced.denominator)"
        case .float(let value): return "(" + PythonText.float(value) + ",)"
        case .character(let character): return String(character)
        }
    }

    /// The key a label table finds this value under: a whole number, or a ratio that reduces to one.
    var labelKey: Int? {
        switch self {
        case .integer(let value): return value
        case .ratio(let numerator, let denominator):
            guard let reduced = Self.reduced(numerator, denominator), reduced.denominator == 1 else { return nil }
            return reduced.numerator
        case .float, .character: return nil
        }
    }

    /// `numerator/denominator` in lowest terms with a positive denominator, as Python's `Fraction`; nil
    /// for a zero denominator, which exifread keeps unreduced.
    static func reduced(_ numerator: Int, _ denominator: Int) -> (numerator: Int, denominator: Int)? {
        guard denominator != 0 else { return nil }
        var (a, b) = (abs(numerator), abs(denominator))
        while b != 0 { (a, b) = (b, a % b) }
        let sign = denominator < 0 ? -1 : 1
        return (sign * numerator / a, sign * denominator / a)
    }
}

/// A field's values as exifread holds them: numbers, or an ASCII field's text (its bytes when they are
/// not UTF-8).
enum EXIFValues {
    case list([EXIFValue])
    case text(String)
    case bytes([UInt8])

    /// exifread's `values[0]`; nil when there is none (exifread raises there, or passes over).
    var first: EXIFValue? {
        switch self {
        case .list(let values): values.first
        case .text(let text): text.first.map(EXIFValue.character)
        case .bytes(let bytes): bytes.first.map { .integer(Int($0)) }
        }
    }

    /// What exifread prints for a field of `count` values of type `type` with no label table: one value
    /// alone, a list (the first 20 and `... ]` past 50), or the text.
    func printed(count: Int, type: Int) -> String {
        switch self {
        case .list(let values):
            if count == 1, let value = values.first { return value.text }
            if count > 50, values.count > 20 {
                return "[" + values.prefix(20).map(\.text).joined(separator: ", ") + ", ... ]"
            }
            return "[" + values.map(\.text).joined(separator: ", ") + "]"
        case .text(let text): return text
        case .bytes(let bytes):
            if count > 50, bytes.count > 20 { return String(PythonText.bytes(bytes.prefix(20)).dropLast()) + ", ... ]" }
            return PythonText.bytes(bytes[...])
        }
    }

    /// A label table's text: each value's label, or its own text, run together (an ASCII field's
    /// characters each in Python's quotes, as exifread looks them up one by one).
    func labelled(_ labels: [Int: String]) -> String {
        switch self {
        case .list(let values): values.map { value in value.labelKey.flatMap { labels[$0] } ?? value.text }.joined()
        case .text(let text): text.map(PythonText.characterRepr).joined()
        case .bytes(let bytes): bytes.map { labels[Int($0)] ?? String($0) }.joined()
        }
    }

    /// exifread's `make_string`: the values 32…255 as Latin-1 characters; when there are none, the values'
    /// digits run together (nothing when they are all 0), or the text; spaces and NULs trimmed.
    func madeString() -> String {
        var string = ""
        switch self {
        case .list(let values):
            for case .integer(let value) in values where (32..<256).contains(value) {
                string.unicodeScalars.append(Unicode.Scalar(UInt8(value)))
            }
            if string.isEmpty {
                string = values.map(\.text).joined()
                if !string.isEmpty, string.allSatisfy({ $0 == "0" }) { return "" }
            }
        case .text(let text):
            string = text
        case .bytes(let bytes):
            for byte in bytes where byte >= 32 { string.unicodeScalars.append(Unicode.Scalar(byte)) }
            if string.isEmpty { string = PythonText.bytes(bytes[...]) }
        }
        return PythonText.trimmed(string, of: [" ", "\0"])
    }

    /// exifread's `make_string_uc`: `make_string` past an 8-byte ASCII, UNICODE or JIS (or empty) code.
    func userComment() -> String {
        switch self {
        case .list(let values):
            let code = EXIFValues.list(Array(values.prefix(8))).madeString().uppercased()
            return ["ASCII", "UNICODE", "JIS", ""].contains(code)
                ? EXIFValues.list(Array(values.dropFirst(8))).madeString() : madeString()
        case .bytes(let bytes):
            let code = EXIFValues.bytes(Array(bytes.prefix(8))).madeString().uppercased()
            return ["ASCII", "UNICODE", "JIS", ""].contains(code)
                ? EXIFValues.bytes(Array(bytes.dropFirst(8))).madeString() : madeString()
        case .text: return madeString()
        }
    }
}
