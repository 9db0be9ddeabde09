/// Reads a JPEG file's marker segments, to check what an encoder wrote.
package enum JPEGMarkers {
    /// The Huffman tables of a JPEG file: each DHT segment's tables as (class and id, the 16 code counts).
    package static func huffmanTables(_ bytes: [UInt8]) -> [(id: UInt8, counts: [UInt8])] {
        var tables: [(id: UInt8, counts: [UInt8])] = []
        var index = 2
        while index + 4 <= bytes.count, bytes[index] == 0xFF, bytes[index + 1] != 0xDA {
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if bytes[index + 1] == 0xC4 {
                var table = index + 4
                while table + 17 <= index + 2 + length {
                    let counts = Array(bytes[(table + 1)..<(table + 17)])
                    tables.append((bytes[table], counts))
                    table += 17 + counts.reduce(0) { $0 + Int($1) }
                }
            }
            index += 2 + length
        }
        return tables
    }
}
