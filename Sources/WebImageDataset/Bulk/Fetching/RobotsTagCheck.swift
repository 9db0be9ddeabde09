import Foundation
import WebImage

/// Fails a response whose `X-Robots-Tag` has a disallowed directive, before its body is read, as
/// img2dataset's `is_disallowed` does: each header value is `[agent:] directive, directive…`; a value
/// scoped to an agent counts only when the agent is this crawler's token.
struct RobotsTagCheck: ImageDownloaderResponseModifying {
    /// The directives that fail a row, lowercase.
    let disallowed: Set<String>
    /// This crawler's token, lowercase; nil when it has none (then only unscoped values count).
    let userAgentToken: String?

    func modifiedResponse(_ response: TransferResponse) -> TransferResponse? {
        isDisallowed(response.headers.values(for: "X-Robots-Tag")) ? nil : response
    }

    /// Whether one of the header's `values` disallows the use.
    func isDisallowed(_ values: [String]) -> Bool {
        values.contains { value in
            let parts = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let agent = parts.count == 2 ? parts[0].trimmingCharacters(in: .whitespaces).lowercased() : nil
            guard agent == nil || agent == userAgentToken else { return false }
            return (parts.last ?? "").split(separator: ",").contains {
                disallowed.contains($0.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
    }
}
