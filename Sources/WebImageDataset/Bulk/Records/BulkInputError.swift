/// A problem with the input file that no retry fixes (the command exits with 2).
public struct BulkInputError: Error, Sendable, CustomStringConvertible {
    /// The sentence that says what is wrong and where.
    public let description: String

    /// The error `description`.
    public init(_ description: String) { self.description = description }
}

/// A failure of the output directory's files (create, write, rename, lock): a retry may fix it (the
/// command exits with 1).
public struct BulkFileError: Error, Sendable, CustomStringConvertible {
    /// The sentence that says which file and what the system said.
    public let description: String

    /// The error `description`.
    public init(_ description: String) { self.description = description }
}
