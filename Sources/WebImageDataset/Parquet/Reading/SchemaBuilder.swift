/// Turns the footer's flat, depth-first list of schema elements into a plan per top-level column.
///
/// Readable columns are primitives and LISTs (the standard three-level layout, the legacy two-level one,
/// and bare repeated primitives) of primitives or of further LISTs. Structs, maps, lists of structs and
/// INT96 stay in the schema as ``ParquetColumnType/unsupported(reason:)``.
enum SchemaBuilder {
    /// Deeper schemas are refused (it also keeps every level below 256).
    static let maxDepth = 32

    struct Node {
        var element: SchemaElement
        var children: [Node]

        var isPrimitive: Bool { element.type != nil && children.isEmpty }
        var repetition: Repetition { element.repetition.flatMap(Repetition.init(rawValue:)) ?? .required }
        var isList: Bool { element.convertedType == ConvertedType.list || element.logicalType == LogicalTypeField.list }
        var isMap: Bool {
            element.convertedType == ConvertedType.map || element.convertedType == ConvertedType.mapKeyValue
                || element.logicalType == LogicalTypeField.map
        }
        var leafCount: Int { isPrimitive ? 1 : children.reduce(0) { $0 + $1.leafCount } }
    }

    /// The plans of the top-level columns of `elements`.
    static func plans(_ elements: [SchemaElement]) throws -> [ColumnPlan] {
        guard !elements.isEmpty else { throw ParquetError.corrupt("the schema is empty") }
        var index = 0
        let root = try node(elements, &index, depth: 0)
        guard index == elements.count else {
            throw ParquetError.corrupt("the schema has \(elements.count - index) elements outside its tree")
        }
        var plans: [ColumnPlan] = []
        var leafIndex = 0
        for field in root.children {
            plans.append(plan(field, leafIndex: leafIndex))
            leafIndex += field.leafCount
        }
        return plans
    }

    private static func node(_ elements: [SchemaElement], _ index: inout Int, depth: Int) throws -> Node {
        guard depth <= maxDepth else { throw ParquetError.corrupt("the schema nests deeper than \(maxDepth)") }
        guard index < elements.count else { throw ParquetError.corrupt("the schema ends inside a group") }
        let element = elements[index]
        index += 1
        let childCount = element.childCount ?? 0
        guard childCount >= 0, childCount <= elements.count - index else {
            throw ParquetError.corrupt("schema element `\(element.name)` claims \(childCount) children")
        }
        if element.type == nil && element.childCount == nil && depth > 0 {
            throw ParquetError.corrupt("schema element `\(element.name)` has neither a type nor children")
        }
        var children: [Node] = []
        for _ in 0..<childCount { children.append(try node(elements, &index, depth: depth + 1)) }
        return Node(element: element, children: children)
    }

    private struct Description {
        var type: ParquetColumnType
        var shape: LevelShape
        var leaf: SchemaElement
        var path: [String]
        var maxDefinitionLevel: Int
        var maxRepetitionLevel: Int
    }

    private static func plan(_ field: Node, leafIndex: Int) -> ColumnPlan {
        let nullable = field.repetition == .optional
        do {
            let description = try describe(field, definition: 0, repetition: 0, path: [])
            let isText = description.type.leafType == .string
            return ColumnPlan(
                column: ParquetColumn(name: field.element.name, type: description.type, isNullable: nullable),
                leafIndex: leafIndex, leafCount: 1, path: description.path.joined(separator: "."),
                physicalType: description.leaf.type ?? 0, typeLength: description.leaf.typeLength ?? 0,
                isText: isText, maxDefinitionLevel: description.maxDefinitionLevel,
                maxRepetitionLevel: description.maxRepetitionLevel, shape: description.shape, unsupported: nil)
        } catch {
            let reason = (error as? ParquetError)?.message ?? "\(error)"
            return ColumnPlan(
                column: ParquetColumn(
                    name: field.element.name, type: .unsupported(reason: reason), isNullable: nullable),
                leafIndex: leafIndex, leafCount: field.leafCount, path: field.element.name, physicalType: 0,
                typeLength: 0, isText: false, maxDefinitionLevel: 0, maxRepetitionLevel: 0,
                shape: .leaf(definedLevel: 0), unsupported: reason)
        }
    }

    private static func describe(_ node: Node, definition: Int, repetition: Int, path: [String]) throws
        -> Description
    {
        let path = path + [node.element.name]
        if node.repetition == .repeated {
            // A repeated field outside a LIST group: a list of required elements that is never null.
            var element = node
            element.element.repetition = Repetition.required.rawValue
            let inner = try describe(element, definition: definition + 1, repetition: repetition + 1, path: [])
            return Description(
                type: .list(element: inner.type, elementNullable: false),
                shape: .list(
                    nullable: false, presentLevel: definition, elementsLevel: definition + 1,
                    repetitionLevel: repetition + 1, element: inner.shape),
                leaf: inner.leaf, path: path + inner.path.dropFirst(),
                maxDefinitionLevel: inner.maxDefinitionLevel, maxRepetitionLevel: inner.maxRepetitionLevel)
        }
        let optional = node.repetition == .optional
        let level = definition + (optional ? 1 : 0)
        if node.isPrimitive {
            return Description(
                type: try primitiveType(node.element), shape: .leaf(definedLevel: level), leaf: node.element,
                path: path, maxDefinitionLevel: level, maxRepetitionLevel: repetition)
        }
        if node.isMap { throw ParquetError.unsupported("map columns are not supported") }
        guard node.isList else { throw ParquetError.unsupported("struct columns are not supported") }
        guard node.children.count == 1, let repeated = node.children.first, repeated.repetition == .repeated else {
            throw ParquetError.unsupported("a LIST group without one repeated child is not supported")
        }
        let elementsLevel = level + 1
        let elementRepetition = repetition + 1
        let inner: Description
        var elementNullable = false
        if repeated.isPrimitive {
            // The legacy two-level layout: the repeated field is the element.
            var element = repeated
            element.element.repetition = Repetition.required.rawValue
            inner = try describe(element, definition: elementsLevel, repetition: elementRepetition, path: path)
        } else if repeated.children.count == 1, repeated.element.name != "array",
            repeated.element.name != node.element.name + "_tuple", let element = repeated.children.first
        {
            guard element.repetition != .repeated else {
                throw ParquetError.unsupported("a repeated LIST element is not supported")
            }
            elementNullable = element.repetition == .optional
            inner = try describe(
                element, definition: elementsLevel, repetition: elementRepetition,
                path: path + [repeated.element.name])
        } else {
            throw ParquetError.unsupported("lists of structs are not supported")
        }
        return Description(
            type: .list(element: inner.type, elementNullable: elementNullable),
            shape: .list(
                nullable: optional, presentLevel: level, elementsLevel: elementsLevel,
                repetitionLevel: elementRepetition, element: inner.shape),
            leaf: inner.leaf, path: inner.path, maxDefinitionLevel: inner.maxDefinitionLevel,
            maxRepetitionLevel: inner.maxRepetitionLevel)
    }

    private static func primitiveType(_ element: SchemaElement) throws -> ParquetColumnType {
        guard let raw = element.type, let type = PhysicalType(rawValue: raw) else {
            throw ParquetError.corrupt("schema element `\(element.name)` has physical type \(element.type ?? -1)")
        }
        switch type {
        case .boolean: return .bool
        case .int32: return .int32
        case .int64: return .int64
        case .float: return .float
        case .double: return .double
        case .int96: throw ParquetError.unsupported("physical type INT96 is not supported")
        case .byteArray:
            let text =
                [ConvertedType.utf8, ConvertedType.enumeration, ConvertedType.json].contains(element.convertedType)
                || [LogicalTypeField.string, LogicalTypeField.enumeration, LogicalTypeField.json].contains(
                    element.logicalType)
            return text ? .string : .bytes
        case .fixedLenByteArray:
            guard let length = element.typeLength, length >= 0 else {
                throw ParquetError.corrupt("FIXED_LEN_BYTE_ARRAY `\(element.name)` has no valid type_length")
            }
            return .bytes
        }
    }
}

extension ParquetColumnType {
    /// The innermost element type.
    var leafType: ParquetColumnType {
        if case .list(let element, _) = self { return element.leafType }
        return self
    }
}
