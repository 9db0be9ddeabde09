/// Turns a column chunk's levels and values into one ``ParquetValue`` per row (Dremel record assembly
/// for primitives and nested lists).
struct RecordAssembler {
    private let shape: LevelShape
    private let chunk: DecodedColumnChunk
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
    mutating func assemble(rowCount: Int) throws -> [ParquetValue] {
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
        guard valueIndex == chunk.values.count else {
            throw ParquetError.corrupt("the column holds more values than its definition levels use")
        }
        return rows
    }

    private func repetition(_ slot: Int) -> Int { hasRepetition ? Int(chunk.repetitionLevels[slot]) : 0 }

    private func definition(_ slot: Int, default defaultLevel: Int) -> Int {
        hasDefinition ? Int(chunk.definitionLevels[slot]) : defaultLevel
    }

    private mutating func assembleFlat(definedLevel: Int, rowCount: Int) throws -> [ParquetValue] {
        guard chunk.slotCount == rowCount else {
            throw ParquetError.corrupt("the column holds \(chunk.slotCount) rows, its row group \(rowCount)")
        }
        guard hasDefinition else {
            guard chunk.values.count == rowCount else {
                throw ParquetError.corrupt("the column holds \(chunk.values.count) values for \(rowCount) rows")
            }
            return chunk.values
        }
        var rows: [ParquetValue] = []
        rows.reserveCapacity(rowCount)
        for level in chunk.definitionLevels {
            if Int(level) >= definedLevel {
                guard valueIndex < chunk.values.count else {
                    throw ParquetError.corrupt("definition levels ask for more values than the pages hold")
                }
                rows.append(chunk.values[valueIndex])
                valueIndex += 1
            } else {
                rows.append(.null)
            }
        }
        guard valueIndex == chunk.values.count else {
            throw ParquetError.corrupt("the column holds more values than its definition levels use")
        }
        return rows
    }

    /// The value starting at `slot`, consuming its slots. Recursion depth is the list nesting, which the
    /// schema builder bounds.
    private mutating func value(_ shape: LevelShape) throws -> ParquetValue {
        switch shape {
        case .leaf(let definedLevel):
            let level = definition(slot, default: definedLevel)
            slot += 1
            guard level >= definedLevel else { return .null }
            guard valueIndex < chunk.values.count else {
                throw ParquetError.corrupt("definition levels ask for more values than the pages hold")
            }
            defer { valueIndex += 1 }
            return chunk.values[valueIndex]
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
