import CMessageCapture
import Logging

/// What a C library prints to `stderr` while a codec runs on this thread, logged at debug level (label
/// `WebImage.LibraryMessages`, metadata `library`) instead of reaching the terminal or a test log.
///
/// Debian's libjxl prints one line per failed check inside a damaged file and has no switch to stop it;
/// the decoder's own error already says what went wrong, so the lines are detail for whoever turns
/// debug logging on. `CMessageCapture` says how the text is kept per thread.
enum LibraryMessages {
    static let logger = Logger(label: "WebImage.LibraryMessages")

    /// Runs `body`, keeping what `library` prints to `stderr` on this thread meanwhile, then logs it to
    /// `logger`, a line a record.
    static func routed<Result>(
        from library: String, logger: Logger = LibraryMessages.logger, _ body: () throws -> Result
    ) rethrows -> Result {
        let keeping = wi_messages_begin() != 0
        defer {
            if keeping {
                let text = String(cString: wi_messages_text())
                wi_messages_end()
                for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                    logger.debug("\(line)", metadata: ["library": "\(library)"])
                }
            }
        }
        return try body()
    }
}
