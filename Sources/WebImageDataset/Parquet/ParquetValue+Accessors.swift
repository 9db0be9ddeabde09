extension ParquetValue {
    /// The text of a ``string(_:)``, else `nil`.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The bytes of a ``bytes(_:)``, else `nil`.
    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    /// The number of an ``int32(_:)`` or ``int64(_:)``, else `nil`.
    public var integerValue: Int64? {
        switch self {
        case .int32(let number): Int64(number)
        case .int64(let number): number
        default: nil
        }
    }

    /// The number of a ``float(_:)`` or ``double(_:)``, else `nil`.
    public var doubleValue: Double? {
        switch self {
        case .float(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    /// The value of a ``bool(_:)``, else `nil`.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The elements of a ``list(_:)``, else `nil`.
    public var listValue: [ParquetValue]? {
        if case .list(let items) = self { return items }
        return nil
    }
}
