import Foundation

/// The few fields the client reads from S3's XML answers (`<Error>`, `<ListBucketResult>`,
/// `<InitiateMultipartUploadResult>`): the text of elements found by name. S3's answers are flat
/// enough for that; a full XML parser would add a dependency (libxml2 through FoundationXML) for
/// nothing the client reads.
enum S3XML {
    /// The text of every `<name>…</name>` element, entities decoded, in document order.
    static func all(_ name: String, in body: [UInt8]) -> [String] {
        let open = Array("<\(name)>".utf8)
        let close = Array("</\(name)>".utf8)
        var values: [String] = []
        var index = 0
        while let start = find(open, in: body, from: index) {
            let textStart = start + open.count
            guard let end = find(close, in: body, from: textStart) else { break }
            values.append(decodeEntities(String(decoding: body[textStart..<end], as: UTF8.self)))
            index = end + close.count
        }
        return values
    }

    /// The text of the first `<name>…</name>` element.
    static func first(_ name: String, in body: [UInt8]) -> String? { all(name, in: body).first }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else {
            return nil
        }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The five predefined entities and numeric character references.
    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semi) <= 10 else {
                result += rest[amp...]
                return result
            }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                let scalar: Unicode.Scalar? =
                    entity.hasPrefix("#x")
                    ? UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                    : entity.hasPrefix("#") ? UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init) : nil
                if let scalar { result.unicodeScalars.append(scalar) } else { result += rest[amp...semi] }
            }
            rest = rest[rest.index(after: semi)...]
        }
        return result + rest
    }

    /// `text` with `&`, `<`, `>` escaped, for the bodies the client sends.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
