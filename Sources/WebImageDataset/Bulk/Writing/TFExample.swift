/// A `tf.train.Example` protocol buffer, encoded by hand: a map of named features, each a list of bytes,
/// 32-bit floats or 64-bit integers (TensorFlow's `example.proto` and `feature.proto`).
///
/// Wire format: `Example.features` is field 1, `Features.feature` (a map) is field 1 with one entry per
/// feature (key field 1, value field 2), and `Feature`'s `bytes_list`, `float_list` and `int64_list` are
/// fields 1, 2 and 3, each holding its values in field 1 (floats and integers packed).
struct TFExample {
    /// One feature's values.
    enum Feature {
        case bytes([[UInt8]])
        case floats([Float])
        case int64s([Int64])
    }

    /// The features, written in this order.
    var features: [(name: String, feature: Feature)] = []

    /// The encoded `Example`.
    func serialized() -> [UInt8] {
        var map: [UInt8] = []
        for (name, feature) in features {
            var entry: [UInt8] = []
            Self.appendField(1, Array(name.utf8), to: &entry)
            Self.appendField(2, Self.encode(feature), to: &entry)
            Self.appendField(1, entry, to: &map)
        }
        var example: [UInt8] = []
        Self.appendField(1, map, to: &example)
        return example
    }

    /// The encoded `Feature`: its one list, in the field of its kind.
    private static func encode(_ feature: Feature) -> [UInt8] {
        var list: [UInt8] = []
        let kind: UInt64
        switch feature {
        case .bytes(let values):
            kind = 1
            for value in values { appendField(1, value, to: &list) }
        case .floats(let values):
            kind = 2
            var packed: [UInt8] = []
            for value in values {
                for shift in stride(from: 0, to: 32, by: 8) {
                    packed.append(UInt8(truncatingIfNeeded: value.bitPattern >> UInt32(shift)))
                }
            }
            appendField(1, packed, to: &list)
        case .int64s(let values):
            kind = 3
            var packed: [UInt8] = []
            // A negative integer is its two's complement as an unsigned varint (ten bytes), as int64 is.
            for value in values { appendVarint(UInt64(bitPattern: value), to: &packed) }
            appendField(1, packed, to: &list)
        }
        var encoded: [UInt8] = []
        appendField(kind, list, to: &encoded)
        return encoded
    }

    /// A length-delimited field (wire type 2): its tag, its length, its bytes.
    private static func appendField(_ number: UInt64, _ bytes: [UInt8], to output: inout [UInt8]) {
        appendVarint(number << 3 | 2, to: &output)
        appendVarint(UInt64(bytes.count), to: &output)
        output += bytes
    }

    private static func appendVarint(_ value: UInt64, to output: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            output.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        output.append(UInt8(value))
    }
}
