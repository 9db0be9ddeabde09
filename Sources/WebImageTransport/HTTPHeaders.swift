/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and repeated fields are kept as they arrived (a response may carry several `Set-Cookie`
/// lines); lookups compare names case-insensitively as RFC 9110 requires.
///
/// ```swift
/// var headers: HTTPHeaders = ["Accept": "image/webp"]
/// headers["User-Agent"] = "MyApp/1.0"
/// headers["accept"]  // "image/webp"
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field as it appears on the wire.
    public struct Field: Sendable, Hashable {
        /// The field name, in the case it was given.
        public var name: String
        /// The field value, without surrounding whitespace.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field]

    /// Creates an empty list, or one holding `fields` in order.
    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Creates a list from a literal; each pair becomes one field.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value for `name`, or `nil`. Setting a value replaces every field of that name;
    /// setting `nil` removes them.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            if let newValue {
                if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
                    fields[index].value = newValue
                    fields.removeAll { $0.name.caseInsensitiveEquals(name) && $0.value != newValue }
                    // Keep exactly one field of this name, at the position of the first.
                    var seen = false
                    fields.removeAll { field in
                        guard field.name.caseInsensitiveEquals(name) else { return false }
                        defer { seen = true }
                        return seen
                    }
                } else {
                    fields.append(Field(name: name, value: newValue))
                }
            } else {
                fields.removeAll { $0.name.caseInsensitiveEquals(name) }
            }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Appends `text` to the last field's value (obsolete header line folding).
    mutating func continueLastField(with text: String) {
        guard !fields.isEmpty, !text.isEmpty else { return }
        fields[fields.count - 1].value += " " + text
    }

    /// Whether any field has this name.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    /// Whether the list is empty.
    public var isEmpty: Bool { fields.isEmpty }

    // MARK: Validity

    /// Whether `name` may be sent as a field name: a non-empty RFC 9110 token (letters, digits and
    /// ``!#$%&'*+-.^_`|~``). Anything else, a colon, a space, CR, LF or NUL among them, could end the
    /// field early and start another one of the sender's choosing.
    public static func isValidFieldName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// Whether `value` may be sent as a field value: no CR, LF or NUL, which would end the header line
    /// (or, for NUL, cut it short in C) and let the rest of the value inject fields or a second request.
    public static func isValidFieldValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }

    /// The first field that must not be sent (see ``isValidFieldName(_:)`` and ``isValidFieldValue(_:)``),
    /// or nil when every field is safe.
    package func firstInvalidField() -> Field? {
        fields.first { !Self.isValidFieldName($0.name) || !Self.isValidFieldValue($0.value) }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace), without Foundation.
    package var trimmingHTTPWhitespace: Substring {
        var view = Substring(self)
        while let first = view.utf8.first, first == 0x20 || first == 0x09 { view = view.dropFirst() }
        while let last = view.utf8.last, last == 0x20 || last == 0x09 { view = view.dropLast() }
        return view
    }

    /// ASCII case-insensitive comparison, which is what HTTP field names need (no locale involved).
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
            let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
            if lx != ly { return false }
        }
        return true
    }
}
