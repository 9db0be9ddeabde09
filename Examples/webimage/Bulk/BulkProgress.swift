import Foundation
import Locking

/// The live progress line of `webimage bulk` on a terminal: shards done, images, images/s, success rate
/// and ETA, redrawn four times a second on stderr. Off a terminal it draws nothing (each finished shard
/// still prints its line, or its JSON object with `--json`).
final class BulkProgress: Sendable {
    private struct State {
        var shardsDone = 0
        var images = 0
        var successes = 0
        var finished = false
    }

    private let shards: Int
    private let expectedImages: Int
    private let started = DispatchTime.now().uptimeNanoseconds
    private let state = Lock(State())
    private let live: Bool

    /// `shards` and `expectedImages`: what this process was assigned (skipped shards count as done).
    init(shards: Int, expectedImages: Int, live: Bool = Console.stderrIsTerminal) {
        self.shards = shards
        self.expectedImages = expectedImages
        self.live = live
        guard live else { return }
        Thread { [self] in
            while !state.withLock({ $0.finished }) {
                draw()
                usleep(250_000)
            }
        }.start()
    }

    func recordImage(succeeded: Bool) {
        state.withLock {
            $0.images += 1
            if succeeded { $0.successes += 1 }
        }
    }

    /// A shard finished; `skipped` is the stats of one found done by an earlier run.
    func recordShard(skipped: BulkShardStats? = nil) {
        state.withLock {
            $0.shardsDone += 1
            $0.images += skipped?.count ?? 0
            $0.successes += skipped?.successes ?? 0
        }
    }

    /// Stops redrawing and leaves the last line in place.
    func finish() {
        let wasLive = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished && live
        }
        if wasLive {
            draw()
            Console.write("\n", to: .standardError)
        }
    }

    /// Clears the line so a shard's own line can be printed, then redraws.
    func interrupt(_ print: () -> Void) {
        if live { Console.write("\r\u{1B}[2K", to: .standardError) }
        print()
        if live { draw() }
    }

    private func draw() {
        let (done, images, successes) = state.withLock { ($0.shardsDone, $0.images, $0.successes) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let rate = Double(images) / max(seconds, 0.001)
        let remaining = max(0, expectedImages - images)
        let eta = rate > 0 ? Self.duration(Double(remaining) / rate) : "?"
        let success = images > 0 ? String(format: "%.1f%%", 100 * Double(successes) / Double(images)) : "–"
        let line = String(
            format: "shards %d/%d · %d/%d images · %.0f/s · %@ ok · ETA %@", done, shards, images, expectedImages,
            rate, success, eta)
        Console.write("\r\u{1B}[2K" + String(line.prefix(Console.terminalColumns - 1)), to: .standardError)
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
            : String(format: "%dm%02ds", total / 60, total % 60)
    }
}
