/// One CSV record, a byte at a time, as Python's `csv` reader (excel dialect) splits it.
struct CSVRecordParser {
    enum Step: Equatable {
        case more
        case blankLine
        case record([String])
    }

    enum End: Equatable {
        case nothing
        case record([String])
        case unclosedQuote
    }

    private enum State {
        /// At the start of a field: a quote here opens a quoted field.
        case fieldStart
        /// In a field that did not start with a quote: a quote is a plain character.
        case unquoted
        case quoted
        /// A quote inside a quoted field: a second one is a literal quote, a delimiter or a line break ends
        /// the field, anything else is kept (as Python does when not `strict`).
        case quoteInQuoted
    }

    private var state = State.fieldStart
    private var fields: [String] = []
    private var field: [UInt8] = []
    private var sawByte = false

    mutating func consume(_ byte: UInt8) -> Step {
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let newline = UInt8(ascii: "\n")
        // A carriage return outside quotes belongs to a CR LF line break.
        if byte == UInt8(ascii: "\r"), state != .quoted { return .more }
        switch state {
        case .quoted:
            if byte == quote {
                state = .quoteInQuoted
            } else {
                field.append(byte)
            }
            sawByte = true
            return .more
        case .quoteInQuoted where byte == quote:
            field.append(quote)
            state = .quoted
            return .more
        case .fieldStart, .unquoted, .quoteInQuoted:
            if byte == comma {
                endField()
                sawByte = true
                return .more
            }
            if byte == newline {
                guard sawByte else { return .blankLine }
                return .record(endRecord())
            }
            if byte == quote && state == .fieldStart {
                state = .quoted
            } else {
                field.append(byte)
                state = .unquoted
            }
            sawByte = true
            return .more
        }
    }

    /// The end of the data: the last record when it had no line break, or an error inside quotes.
    mutating func end() -> End {
        if state == .quoted { return .unclosedQuote }
        return sawByte ? .record(endRecord()) : .nothing
    }

    private mutating func endField() {
        fields.append(String(decoding: field, as: UTF8.self))
        field.removeAll(keepingCapacity: true)
        state = .fieldStart
    }

    private mutating func endRecord() -> [String] {
        endField()
        defer {
            fields = []
            sawByte = false
        }
        return fields
    }
}
