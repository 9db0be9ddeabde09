/// Turns a column chunk's levels and values into one ``ParquetValue`` per row (Dremel record assembly
/// for primitives and nested lists).
struct RecordAssembler {
    private let shape: LevelShape
    private var chunk: DecodedColumnChunk
    private let hasRepetition: Bool
    private let hasDefinition: Bool
    private var slot = 0
    private var valueIndex = 0

    init(shape: LevelShape, chunk: DecodedColumnChunk) {
        self.shape = shape
        self.chunk = chunk
        self.hasRepetition = !chunk.repetitionLevels.isEmpty
        self.hasDefinition = !chunk.definitionLevels.isEmpty
    }

    /// The rows; throws unless they are exactly `rowCount` and use every value.
    mutating func assemble(rowCount: Int) throws -> ParquetColumnValues {
        if case .leaf(let definedLevel) = shape, !hasRepetition {
            return try assembleFlat(definedLevel: definedLevel, rowCount: rowCount)
        }
        var rows: [ParquetValue] = []
        // The row count comes from the footer; the slots were decoded, so they bound what is real.
        rows.reserveCapacity(min(rowCount, chunk.slotCount))
        while slot < chunk.slotCount {
            guard repetition(slot) == 0 else {
                throw ParquetError.corrupt("a row starts with repetition level \(repetition(slot))")
            }
            guard rows.count < rowCount else {
                throw ParquetError.corrupt("the column holds more rows than its row group's \(rowCount)")
            }
            rows.append(try value(shape))
        }
        guard rows.count == rowCount else {
            throw ParquetError.corrupt("the column holds \(rows.count) rows, its row group \(rowCount)")
        }
        guard valueIndex == chunk.valueCount else {
            throw ParquetError.corrupt("the column holds more values than its definition levels use")
        }
        return ParquetColumnValues(entries: rows, rows: nil)
    }

    private func repetition(_ slot: Int) -> Int { hasRepetition ? Int(chunk.repetitionLevels[slot]) : 0 }

    private func definition(_ slot: Int, default defaultLevel: Int) -> Int {
        hasDefinition ? Int(chunk.definitionLevels[slot]) : defaultLevel
    }

    /// A column without lists keeps the chunk's values (and a dictionary's indices) as they are; only the
    /// nulls need a row index of their own. Linear in the rows, with no ``ParquetValue`` made per row.
    private mutating func assembleFlat(definedLevel: Int, rowCount: Int) throws -> ParquetColumnValues {
        guard chunk.slotCount == rowCount else {
            throw ParquetError.corrupt("the column holds \(chunk.slotCount) rows, its row group \(rowCount)")
        }
        let valueCount = chunk.valueCount
        // Moved out of the chunk, so the indices are grown in place rather than copied.
        let entries = chunk.values
        var indices = chunk.indices
        chunk.values = []
        chunk.indices = nil
        guard hasDefinition else {
            guard valueCount == rowCount else {
                throw ParquetError.corrupt("the column holds \(valueCount) values for \(rowCount) rows")
            }
            return ParquetColumnValues(entries: entries, rows: indices)
        }
        let levels = chunk.definitionLevels
        var defined = 0
        for level in levels where Int(level) >= definedLevel { defined += 1 }
        guard defined <= valueCount else {
            throw ParquetError.corrupt("definition levels ask for more values than the pages hold")
        }
        guard defined == valueCount else {
            throw ParquetError.corrupt("the column holds more values than its definition levels use")
        }
        if defined == rowCount && indices == nil { return ParquetColumnValues(entries: entries, rows: nil) }
        guard var rows = indices else {
            var rows: [UInt32] = []
            rows.reserveCapacity(rowCount)
            var next: UInt32 = 0
            for level in levels {
                if Int(level) >= definedLevel {
                    rows.append(next)
                    next += 1
                } else {
                    rows.append(ParquetColumnValues.null)
                }
            }
            return ParquetColumnValues(entries: entries, rows: rows)
        }
        indices = nil
        // Spread the indices over the rows from the end: row `r`'s index comes from a position at most
        // `r`, which is not overwritten before it is read.
        rows.append(contentsOf: repeatElement(ParquetColumnValues.null, count: rowCount - valueCount))
        var next = valueCount
        for row in stride(from: rowCount - 1, through: 0, by: -1) {
            if Int(levels[row]) >= definedLevel {
                next -= 1
                rows[row] = rows[next]
            } else {
                rows[row] = ParquetColumnValues.null
            }
        }
        return ParquetColumnValues(entries: entries, rows: rows)
    }

    /// The value starting at `slot`, consuming its slots. Recursion depth is the list nesting, which the
    /// schema builder bounds.
    private mutating func value(_ shape: LevelShape) throws -> ParquetValue {
        switch shape {
        case .leaf(let definedLevel):
            let level = definition(slot, default: definedLevel)
            slot += 1
            guard level >= definedLevel else { return .null }
            guard valueIndex < chunk.valueCount else {
                throw ParquetError.corrupt("definition levels ask for more values than the pages hold")
            }
            defer { valueIndex += 1 }
            return chunk.value(valueIndex)
        case .list(let nullable, let presentLevel, let elementsLevel, let repetitionLevel, let element):
            let level = definition(slot, default: elementsLevel)
            if nullable && level < presentLevel {
                slot += 1
                return .null
            }
            if level < elementsLevel {
                slot += 1
                return .list([])
            }
            var elements = [try value(element)]
            while slot < chunk.slotCount {
                let next = repetition(slot)
                if next < repetitionLevel { break }
                guard next == repetitionLevel else {
                    throw ParquetError.corrupt("repetition level \(next) where at most \(repetitionLevel) fits")
                }
                guard definition(slot, default: elementsLevel) >= elementsLevel else {
                    throw ParquetError.corrupt("a repeated list element is not defined")
                }
                elements.append(try value(element))
            }
            return .list(elements)
        }
    }
}
