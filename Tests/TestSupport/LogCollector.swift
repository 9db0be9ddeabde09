import Locking
import Logging

/// A swift-log `Logger` whose records are kept in memory, for tests that expect (or forbid) messages.
/// It logs every level by default; `logger(level:)` gives one that drops what is below `level`, as a
/// configured application logger would.
package final class LogCollector: Sendable {
    package struct Record: Sendable {
        package let level: Logger.Level
        package let message: String
        package let metadata: Logger.Metadata
    }

    private let storage = Lock<[Record]>([])
    /// Also called with each record as it arrives (a child process prints them for its parent).
    private let echo: (@Sendable (Record) -> Void)?

    package init(echo: (@Sendable (Record) -> Void)? = nil) {
        self.echo = echo
    }

    /// A logger at `.trace`: every record reaches the collector.
    package var logger: Logger { logger(level: .trace) }

    package func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "tests") { _ in Handler(collector: self) }
        logger.logLevel = level
        return logger
    }

    package var records: [Record] { storage.withLock { $0 } }

    package var messages: [String] { records.map(\.message) }

    fileprivate func append(_ record: Record) {
        storage.withLock { $0.append(record) }
        echo?(record)
    }

    private struct Handler: LogHandler {
        let collector: LogCollector
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            collector.append(Record(level: event.level, message: event.message.description, metadata: merged))
        }
    }
}
