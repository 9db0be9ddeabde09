import Foundation

/// When a failed download is tried again (`ImageDownloaderConfig.retryPolicy`).
///
/// A download is retried after a timeout, a lost or refused connection, a transport failure, no room in
/// the downloader's in-flight body budget (`inFlightBodyLimit`), a 5xx or a 429, at most `maximumAttempts` times in all; every download is a GET, so repeating one is safe. The
/// wait before attempt `n + 1` is `baseDelay × 2^(n − 1)`, at most `maximumDelay`, times a random factor
/// between 0.5 and 1 (jitter, so many clients throttled together do not return together); a 429 or 503
/// with `Retry-After` (seconds or an HTTP date) waits what it says instead, at most `maximumRetryAfter`.
/// A download waiting to retry holds no `maxConcurrentDownloads` slot; its callers keep their tokens,
/// and a cancel during the wait ends it with `cancelled` at once.
///
/// ```swift
/// var config = ImageDownloaderConfig()
/// config.retryPolicy = RetryPolicy(maximumAttempts: 3)   // 0.25–0.5 s, then 0.5–1 s
/// ```
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included; 1 means no retry. `1` by default.
    public var maximumAttempts: Int
    /// The wait before the first retry, before jitter, in seconds. `0.5` by default.
    public var baseDelay: TimeInterval
    /// The longest wait between attempts, before jitter, in seconds. `30` by default.
    public var maximumDelay: TimeInterval
    /// The longest `Retry-After` honoured, in seconds: a longer one waits this long. `300` by default.
    public var maximumRetryAfter: TimeInterval

    /// No retry: every failure is final (the default).
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// Creates a policy.
    public init(
        maximumAttempts: Int, baseDelay: TimeInterval = 0.5, maximumDelay: TimeInterval = 30,
        maximumRetryAfter: TimeInterval = 300
    ) {
        self.maximumAttempts = maximumAttempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// Whether retrying may help after `error`: timeouts, lost or refused connections, transport
    /// failures, a full in-flight body budget, 5xx and 429.
    public static func isRetryable(_ error: ImageDownloaderError) -> Bool {
        switch error.code {
        case .timedOut, .connectionLost, .cannotConnect, .transport, .inFlightBodyLimit:
            return true
        case .invalidDownloadStatusCode:
            guard let status = error.statusCode else { return false }
            return status == 429 || (500..<600).contains(status)
        default:
            return false
        }
    }

    /// Seconds to wait before the attempt after `attempt` (1 for the first) that failed with `error`; nil
    /// when there is none (not retryable, or no attempt left). `jitter` is the random factor in 0.5…1.
    func delay(after error: ImageDownloaderError, attempt: Int, jitter: Double = .random(in: 0.5...1)) -> TimeInterval?
    {
        guard attempt < maximumAttempts, Self.isRetryable(error) else { return nil }
        if let status = error.statusCode, status == 429 || status == 503,
            let value = error.response?.headers["Retry-After"]?.trimmingCharacters(in: .whitespaces)
        {
            if let seconds = Double(value), seconds.isFinite { return min(maximumRetryAfter, max(0, seconds)) }
            if let date = HTTPDate.parse(value) { return min(maximumRetryAfter, max(0, date.timeIntervalSinceNow)) }
        }
        let exponential = baseDelay * pow(2, Double(min(attempt - 1, 62)))
        return max(0, min(maximumDelay, exponential)) * jitter
    }
}
