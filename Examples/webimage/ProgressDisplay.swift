import Foundation
import Synchronization

/// Shows how a batch is going. On a terminal (stderr is a TTY): a bar per running download and a total
/// bar with rate and ETA, redrawn in place ten times a second. Otherwise: nothing but the result lines.
///
/// Every write to stdout or stderr while a batch runs goes through here, under one lock, so result
/// lines never tear the bars.
final class ProgressDisplay: Sendable {
    /// How results are printed as they complete.
    enum ResultLines: Sendable {
        /// One plain text line per result on stdout.
        case plain
        /// One JSON object per result on stdout.
        case json
        /// Nothing (the caller prints a table).
        case none
    }

    private struct Running {
        var url: URL
        var received: Int
        var expected: Int
    }

    private struct State {
        var total = 0
        var done = 0
        var failed = 0
        var running: [Int: Running] = [:]
        var finishedBytes = 0
        var linesOnScreen = 0
        var started = ContinuousClock.now
    }

    let isTerminal: Bool
    let resultLines: ResultLines
    private let state = Mutex(State())
    private let renderer = Mutex<Task<Void, Never>?>(nil)

    /// Creates a display; `live` nil means "bars when stderr is a terminal".
    init(resultLines: ResultLines, live: Bool? = nil) {
        self.resultLines = resultLines
        self.isTerminal = live ?? Console.stderrIsTerminal
    }

    /// Starts a batch of `total` downloads.
    func begin(total: Int) {
        state.withLock {
            $0.total += total
            $0.started = .now
        }
        guard isTerminal else { return }
        let task = Task { [weak self] in
            // A redraw rate, not synchronisation: the bars only show the latest state.
            while !Task.isCancelled {
                self?.redraw()
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        renderer.withLock { $0 = task }
    }

    /// Records progress of the download at `index`.
    func progress(index: Int, url: URL, received: Int, expected: Int) {
        guard isTerminal else { return }
        state.withLock { $0.running[index] = Running(url: url, received: received, expected: expected) }
    }

    /// Records a finished download and prints its result line.
    func finished(_ outcome: DownloadOutcome) {
        let line: String? =
            switch resultLines {
            case .plain: outcome.plainLine
            case .json: outcome.jsonLine()
            case .none: nil
            }
        state.withLock { state in
            state.running[outcome.index] = nil
            state.done += 1
            if !outcome.ok { state.failed += 1 }
            state.finishedBytes += outcome.byteCount
            if let line {
                clearBoard(&state)
                Console.write(line + "\n", to: .standardOutput)
                if isTerminal { drawBoard(&state) }
            }
        }
    }

    /// Prints a line on stderr (above the bars when they are shown).
    func note(_ text: String) {
        state.withLock { state in
            clearBoard(&state)
            Console.write(text + "\n", to: .standardError)
        }
    }

    /// Stops the bars and erases them.
    func end() {
        let task = renderer.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        state.withLock { clearBoard(&$0) }
    }

    private func redraw() {
        state.withLock { state in
            clearBoard(&state)
            drawBoard(&state)
        }
    }

    private func clearBoard(_ state: inout State) {
        guard state.linesOnScreen > 0 else { return }
        Console.write(String(repeating: "\u{1B}[1A\u{1B}[2K", count: state.linesOnScreen) + "\r", to: .standardError)
        state.linesOnScreen = 0
    }

    private func drawBoard(_ state: inout State) {
        let width = max(40, Console.terminalColumns - 1)
        var lines: [String] = []
        let shown = state.running.sorted { $0.key < $1.key }.prefix(8)
        for (_, download) in shown {
            let fraction = download.expected > 0 ? Double(download.received) / Double(download.expected) : nil
            let size =
                download.expected > 0
                ? "\(Format.bytes(download.received))/\(Format.bytes(download.expected))"
                : Format.bytes(download.received)
            let name =
                download.url.lastPathComponent.isEmpty ? download.url.redactedString : download.url.lastPathComponent
            lines.append("  \(Format.bar(fraction, width: 20)) \(Format.percent(fraction)) \(size)  \(name)")
        }
        if state.running.count > shown.count { lines.append("  … \(state.running.count - shown.count) more running") }

        let runningFraction = state.running.values.reduce(0.0) { sum, download in
            sum + (download.expected > 0 ? Double(download.received) / Double(download.expected) : 0)
        }
        let fraction = state.total > 0 ? (Double(state.done) + runningFraction) / Double(state.total) : 0
        let bytes = state.finishedBytes + state.running.values.reduce(0) { $0 + $1.received }
        let elapsed = Format.seconds(ContinuousClock.now - state.started)
        let rate = elapsed > 0 ? Double(bytes) / elapsed : 0
        let eta = fraction > 0.01 ? Format.duration(elapsed / fraction - elapsed) : "--"
        let failed = state.failed > 0 ? ", \(state.failed) failed" : ""
        lines.append(
            "total \(Format.bar(fraction, width: 20)) \(state.done)/\(state.total) done\(failed)  "
                + "\(Format.bytes(bytes))  \(Format.bytes(Int(rate)))/s  ETA \(eta)")
        let text = lines.map { String($0.prefix(width)) + "\n" }.joined()
        Console.write(text, to: .standardError)
        state.linesOnScreen = lines.count
    }
}

/// Writing to the standard streams and asking about the terminal.
enum Console {
    /// Whether stderr is a terminal that understands cursor movement.
    static var stderrIsTerminal: Bool {
        isatty(STDERR_FILENO) != 0 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// The terminal's width in columns (80 when unknown).
    static var terminalColumns: Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Writes `text` unbuffered. When the reader has gone (`webimage … | head`), the process ends as
    /// a Unix tool ends on SIGPIPE, quietly with status 141: the library ignores SIGPIPE for its sockets,
    /// and Foundation's `FileHandle.write` would trap on the error instead. Other errors drop the text.
    static func write(_ text: String, to handle: FileHandle) {
        let descriptor = handle.fileDescriptor
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written >= 0 {
                bytes = bytes.dropFirst(written)
            } else if errno == EINTR {
                continue
            } else if errno == EPIPE {
                _exit(128 + SIGPIPE)
            } else {
                return
            }
        }
    }
}

/// Human-readable numbers.
enum Format {
    /// "812 B", "52.7 KB", "1.2 MB".
    static func bytes(_ count: Int) -> String {
        let value = Double(count)
        if value < 1024 { return "\(count) B" }
        if value < 1024 * 1024 { return String(format: "%.1f KB", value / 1024) }
        return String(format: "%.1f MB", value / 1024 / 1024)
    }

    /// "[#####-----]"; all "?" when the fraction is unknown.
    static func bar(_ fraction: Double?, width: Int) -> String {
        guard let fraction else { return "[" + String(repeating: "?", count: width) + "]" }
        let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
    }

    /// " 42%", or "  ? " when unknown.
    static func percent(_ fraction: Double?) -> String {
        guard let fraction else { return "  ? " }
        return String(format: "%3d%%", Int(min(max(fraction, 0), 1) * 100))
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// "7s" or "2m05s".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--" }
        if seconds < 60 { return String(format: "%.0fs", seconds.rounded(.up)) }
        return String(format: "%dm%02ds", Int(seconds) / 60, Int(seconds) % 60)
    }
}
