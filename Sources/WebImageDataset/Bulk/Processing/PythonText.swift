/// Python's ways of writing text that img2dataset's `exif` column goes through (``EXIFSummary``):
/// `repr()` of a float, a character and bytes, `str.strip()`, and `json.dumps` (ASCII only).
enum PythonText {
    /// `repr(value)`: the shortest digits that read back as `value`, positional from 1e-4 up to 1e16,
    /// else with an exponent of at least two digits (`1e-05`, `1.5e+16`).
    static func float(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let sign = value.sign == .minus ? "-" : ""
        // Swift's description has the same shortest digits; only their layout differs.
        let written = String(describing: value.magnitude)
        let parts = written.split(separator: "e", maxSplits: 1)
        let exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
        let mantissa = parts[0].split(separator: ".", maxSplits: 1)
        let whole = String(mantissa[0])
        var digits = Array(whole + (mantissa.count == 2 ? String(mantissa[1]) : ""))
        // The value is 0.DIGITS × 10^point.
        var point = whole.count + exponent
        while let first = digits.first, first == "0" {
            digits.removeFirst()
            point -= 1
        }
        while let last = digits.last, last == "0" { digits.removeLast() }
        guard !digits.isEmpty else { return sign + "0.0" }
        let text = String(digits)
        if point > 16 || point <= -4 {
            let tail = digits.count > 1 ? "." + String(digits.dropFirst()) : ""
            let power = point - 1
            let powerDigits = String(abs(power))
            return sign + String(digits[0]) + tail + "e" + (power < 0 ? "-" : "+")
                + (powerDigits.count < 2 ? "0" : "") + powerDigits
        }
        if point <= 0 { return sign + "0." + String(repeating: "0", count: -point) + text }
        if point >= digits.count { return sign + text + String(repeating: "0", count: point - digits.count) + ".0" }
        return sign + String(digits[..<point]) + "." + String(digits[point...])
    }

    /// `repr()` of a one-character string: in single quotes (double for `'`), with Python's escapes for
    /// the backslash, line breaks, tabs and characters that are not printable.
    static func characterRepr(_ character: Character) -> String {
        if character == "'" { return "\"'\"" }
        var body = ""
        for scalar in character.unicodeScalars {
            switch scalar {
            case "\\": body += "\\\\"
            case "\n": body += "\\n"
            case "\r": body += "\\r"
            case "\t": body += "\\t"
            default:
                if isPrintable(scalar) {
                    body.unicodeScalars.append(scalar)
                } else {
                    body += escaped(scalar.value)
                }
            }
        }
        return "'" + body + "'"
    }

    /// `repr()` of bytes: `b'…'` (`b"…"` when there is a `'` and no `"`), other bytes as `\xNN`.
    static func bytes(_ bytes: ArraySlice<UInt8>) -> String {
        let quote: UInt8 = bytes.contains(0x27) && !bytes.contains(0x22) ? 0x22 : 0x27
        var text = "b" + String(UnicodeScalar(quote))
        for byte in bytes {
            switch byte {
            case quote, 0x5C: text += "\\" + String(UnicodeScalar(byte))
            case 0x09: text += "\\t"
            case 0x0A: text += "\\n"
            case 0x0D: text += "\\r"
            case 0x20..<0x7F: text.unicodeScalars.append(UnicodeScalar(byte))
            default: text += "\\x" + hex(UInt32(byte), width: 2)
            }
        }
        return text + String(UnicodeScalar(quote))
    }

    /// `str.strip()`: Python's whitespace off both ends.
    static func stripped(_ text: String) -> String {
        trimmed(text, where: isWhitespace)
    }

    /// `str.strip(characters)`.
    static func trimmed(_ text: String, of characters: Set<Unicode.Scalar>) -> String {
        trimmed(text) { characters.contains($0) }
    }

    /// `json.dumps` of a string with `ensure_ascii`: `"`, `\` and the short escapes, every other character
    /// outside space…`~` as `\uXXXX` (lowercase; a pair of surrogates past U+FFFF).
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case " "..."~": out.unicodeScalars.append(scalar)
            default:
                if scalar.value > 0xFFFF {
                    let value = scalar.value - 0x10000
                    out +=
                        "\\u" + hex(0xD800 + (value >> 10), width: 4) + "\\u" + hex(0xDC00 + (value & 0x3FF), width: 4)
                } else {
                    out += "\\u" + hex(scalar.value, width: 4)
                }
            }
        }
        return out + "\""
    }

    private static func trimmed(_ text: String, where trims: (Unicode.Scalar) -> Bool) -> String {
        var scalars = Substring(text).unicodeScalars
        while let first = scalars.first, trims(first) { scalars.removeFirst() }
        while let last = scalars.last, trims(last) { scalars.removeLast() }
        return String(scalars)
    }

    /// Python's `str.isspace()`.
    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default:
            return false
        }
    }

    /// Python's `str.isprintable()` for one character: not a control, format, surrogate, private-use or
    /// unassigned character, nor a separator other than the space.
    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == " " { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
            .spaceSeparator:
            return false
        default:
            return true
        }
    }

    private static func escaped(_ value: UInt32) -> String {
        if value < 0x100 { return "\\x" + hex(value, width: 2) }
        if value < 0x10000 { return "\\u" + hex(value, width: 4) }
        return "\\U" + hex(value, width: 8)
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
