/// exifread's walk of one TIFF structure (``EXIFSummary``): the IFD chain, the `EXIF` IFD, and the
/// `GPS` and `Interoperability` IFDs tags point to, each entry decoded as exifread decodes it.
struct EXIFWalk {
    let bytes: [UInt8]
    /// The TIFF header's position in the file: every offset counts from it.
    let base: Int
    let littleEndian: Bool
    /// Each tag's printed value under its `"IFD Tag"` name, in the order exifread first met them.
    private(set) var tags = EXIFTags(limit: 4 * EXIFSummary.maximumJSONBytes)
    /// Entries and values read so far (``EXIFSummary/maximumWork``).
    private var work = 0
    /// Bytes of ASCII fields read so far (``EXIFSummary/maximumTextBytes``).
    private var textBytes = 0

    /// The field types' sizes in bytes, by type number (1…13); exifread skips an entry of another type.
    static let typeSizes = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
    /// The tags `details=False` skips: XMP, the maker note, the user comment.
    static let skippedTags: Set<Int> = [0x02BC, 0x927C, 0x9286]

    init(bytes: [UInt8], base: Int, littleEndian: Bool) {
        self.bytes = bytes
        self.base = base
        self.littleEndian = littleEndian
    }

    /// The IFD chain (`Image`, `Thumbnail`, `IFD 2`…), then the `EXIF` IFD `Image ExifOffset` names.
    mutating func run() throws(EXIFSummary.Raised) {
        var seen: Set<Int> = []
        var chain: [Int] = []
        var next = try number(at: 4, size: 4)
        while next != 0, seen.insert(next).inserted {
            chain.append(next)
            try spend(1)
            let entries = try number(at: next, size: 2)
            let following = try number(at: next + 2 + 12 * entries, size: 4)
            next = following == next ? 0 : following
        }
        for (index, ifd) in chain.enumerated() {
            let name = index == 0 ? "Image" : index == 1 ? "Thumbnail" : "IFD \(index)"
            try dump(ifd: ifd, named: name, table: EXIFTag.main)
        }
        if let offset = tags.exifOffset {
            // exifread reads the first value: none raises; one that is not a whole number names no IFD.
            guard let first = offset.first else { throw EXIFSummary.Raised() }
            if let ifd = try first.offset() { try dump(ifd: ifd, named: "EXIF", table: EXIFTag.main) }
        }
    }

    /// Every entry of the IFD at `ifd`, named `named` + the tag's name in `table`.
    private mutating func dump(ifd: Int, named: String, table: [Int: EXIFTag]) throws(EXIFSummary.Raised) {
        let entries = try number(at: ifd, size: 2)
        for index in 0..<entries {
            try spend(1)
            let entry = ifd + 2 + 12 * index
            let tag = try number(at: entry, size: 2)
            guard !Self.skippedTags.contains(tag) else { continue }
            try decode(entry: entry, tag: tag, ifdName: named, table: table)
        }
    }

    private mutating func decode(
        entry: Int, tag: Int, ifdName: String, table: [Int: EXIFTag]
    ) throws(EXIFSummary.Raised) {
        let type = try number(at: entry + 2, size: 2)
        guard (1...13).contains(type) else { return }
        let size = Self.typeSizes[type]
        let count = try number(at: entry + 4, size: 4)
        let offset = count * size > 4 ? try number(at: entry + 8, size: 4) : entry + 8
        let known = table[tag]
        let name = "\(ifdName) \(known?.name ?? Self.unknownName(tag))"
        let values: EXIFValues
        if type == 2 {
            values = try text(at: offset, count: count)
            textBytes += min(count, bytes.count)
            guard textBytes <= EXIFSummary.maximumTextBytes else { throw EXIFSummary.Raised() }
        } else {
            values = .list(try numbers(at: offset, count: count, type: type))
        }
        var printed = values.printed(count: count, type: type)
        switch known?.printing {
        case .labels(let labels)?: printed = values.labelled(labels)
        case .text?: printed = values.madeString()
        case .userComment?: printed = values.userComment()
        case .subIFD(let subIFD)?:
            // exifread follows the first value when it is a whole number; none, or another kind, is passed over.
            if let ifd = try values.first?.offset() {
                try dump(ifd: ifd, named: subIFD.name, table: subIFD.table)
            }
        case nil: break
        }
        try tags.set(name, printed: printed, values: values)
    }

    /// `Tag 0x0ABC`: exifread's name for a tag its table lacks.
    static func unknownName(_ tag: Int) -> String {
        let hex = String(tag, radix: 16, uppercase: true)
        return "Tag 0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// An ASCII field: its bytes up to the first NUL, as text when they are UTF-8, else as bytes.
    private func text(at offset: Int, count: Int) throws(EXIFSummary.Raised) -> EXIFValues {
        guard count != 0 else { return .text("") }
        let field = try read(at: offset, count: count)
        let kept = Array(field.prefix { $0 != 0 })
        if let text = String(validating: kept, as: UTF8.self) { return .text(text) }
        return .bytes(kept)
    }

    /// A numeric field's values; a field of 1,000 or more has none, as exifread reads it.
    private mutating func numbers(at offset: Int, count: Int, type: Int) throws(EXIFSummary.Raised) -> [EXIFValue] {
        guard count < 1000 else { return [] }
        try spend(count)
        let size = Self.typeSizes[type]
        let signed = [6, 8, 9, 10].contains(type)
        var values: [EXIFValue] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            let at = offset + index * size
            switch type {
            case 5, 10:
                values.append(
                    .ratio(
                        try number(at: at, size: 4, signed: signed), try number(at: at + 4, size: 4, signed: signed)))
            case 11, 12:
                values.append(.float(try float(at: at, size: size)))
            default:
                values.append(.integer(try number(at: at, size: size, signed: signed)))
            }
        }
        return values
    }

    private mutating func spend(_ amount: Int) throws(EXIFSummary.Raised) {
        work += amount
        guard work <= EXIFSummary.maximumWork else { throw EXIFSummary.Raised() }
    }

    /// Up to `count` bytes at `offset` past the header: fewer at the end of the file. A position before
    /// the file's start (a signed value taken for an IFD offset) raises, as Python's `seek` does.
    private func read(at offset: Int, count: Int) throws(EXIFSummary.Raised) -> ArraySlice<UInt8> {
        let start = base + offset
        guard start >= 0 else { throw EXIFSummary.Raised() }
        guard start < bytes.count, count > 0 else { return [] }
        return bytes[start..<min(bytes.count, start + min(count, bytes.count))]
    }

    /// exifread's integer read: 0 when fewer than 2 bytes are left (a byte-sized field is always 0); a
    /// raise when 2 or 3 of a 4-byte value are.
    func number(at offset: Int, size: Int, signed: Bool = false) throws(EXIFSummary.Raised) -> Int {
        let field = try read(at: offset, count: size)
        guard field.count >= 2 else { return 0 }
        guard field.count == size else { throw EXIFSummary.Raised() }
        let ordered = littleEndian ? Array(field.reversed()) : Array(field)
        let unsigned = ordered.reduce(0) { $0 << 8 | Int($1) }
        guard signed, ordered[0] & 0x80 != 0 else { return unsigned }
        return unsigned - (1 << (8 * size))
    }

    private func float(at offset: Int, size: Int) throws(EXIFSummary.Raised) -> Double {
        let field = try read(at: offset, count: size)
        guard field.count == size else { throw EXIFSummary.Raised() }
        let ordered = littleEndian ? Array(field.reversed()) : Array(field)
        let pattern = ordered.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return size == 4 ? Double(Float(bitPattern: UInt32(pattern))) : Double(bitPattern: pattern)
    }
}

/// exifread's tags of one image in the order it first set them; a tag set again keeps its place.
struct EXIFTags {
    private(set) var names: [String] = []
    private(set) var printed: [String: String] = [:]
    /// `Image ExifOffset`'s values: where the EXIF IFD is.
    private(set) var exifOffset: EXIFValues?
    /// The most UTF-8 bytes the printed values may hold at once.
    let limit: Int
    private var size = 0

    init(limit: Int) {
        self.limit = limit
    }

    mutating func set(_ name: String, printed text: String, values decoded: EXIFValues) throws(EXIFSummary.Raised) {
        let earlier = printed.updateValue(text, forKey: name)
        if earlier == nil { names.append(name) }
        size += text.utf8.count - (earlier?.utf8.count ?? 0)
        guard size <= limit else { throw EXIFSummary.Raised() }
        if name == "Image ExifOffset" { exifOffset = decoded }
    }

    /// img2dataset's text: `json.dumps` of each tag's printed value, trimmed as Python trims.
    func json(limit: Int) throws(EXIFSummary.Raised) -> String {
        var text = "{"
        var count = 1
        for (index, name) in names.enumerated() {
            let piece =
                (index > 0 ? ", " : "") + PythonText.json(name) + ": "
                + PythonText.json(PythonText.stripped(printed[name] ?? ""))
            count += piece.utf8.count
            guard count <= limit else { throw EXIFSummary.Raised() }
            text += piece
        }
        return text + "}"
    }
}
