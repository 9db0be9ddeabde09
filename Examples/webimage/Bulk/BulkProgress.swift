import Foundation
import Locking

/// The progress of `webimage bulk`: shards done, images, images/s, success rate and ETA.
///
/// - On a terminal (stderr) it is a live line, redrawn four times a second.
/// - With `--json` it is a `{"event":"progress",…}` line on stdout every `--progress-interval` seconds
///   (5 by default), beside the `{"event":"shard",…}` line of each finished shard, for a log collector
///   or a driver program.
/// - Otherwise it is silent: each finished shard still prints its own line.
///
/// Images/s counts only what this run downloaded (shards that an earlier run finished are in the image
/// and success counts, and in the ETA's remaining work, but not in the rate).
final class BulkProgress: Sendable {
    enum Mode: Sendable { case silent, terminal, json }

    private struct State {
        var shardsDone = 0
        var images = 0
        var successes = 0
        /// Images this run processed (not counted from skipped shards' stats).
        var processed = 0
        var finished = false
    }

    /// The numbers a progress line shows.
    struct Snapshot {
        var shardsDone: Int
        var shards: Int
        var images: Int
        var expectedImages: Int
        var imagesPerSecond: Double
        var successRate: Double?
        var etaSeconds: Double?
    }

    private let shards: Int
    private let expectedImages: Int
    private let started = DispatchTime.now().uptimeNanoseconds
    private let state = Lock(State())
    private let mode: Mode

    /// `shards` and `expectedImages`: what this process was assigned (skipped shards count as done).
    init(shards: Int, expectedImages: Int, mode: Mode, jsonInterval: Double = 5) {
        self.shards = shards
        self.expectedImages = expectedImages
        self.mode = mode
        let interval: Double
        switch mode {
        case .silent: return
        case .terminal: interval = 0.25
        case .json: interval = jsonInterval
        }
        Thread { [self] in
            // The terminal line appears at once; the first JSON line after one interval.
            var next = DispatchTime.now().uptimeNanoseconds + (mode == .json ? UInt64(interval * 1e9) : 0)
            while !state.withLock({ $0.finished }) {
                if DispatchTime.now().uptimeNanoseconds >= next {
                    draw()
                    next = DispatchTime.now().uptimeNanoseconds + UInt64(interval * 1e9)
                }
                usleep(50_000)  // a short nap, so finish() is not held up by a long interval
            }
        }.start()
    }

    func recordImage(succeeded: Bool) {
        state.withLock {
            $0.images += 1
            $0.processed += 1
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

    /// Stops redrawing; on a terminal, leaves the last line in place.
    func finish() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if wasRunning && mode == .terminal {
            draw()
            Console.write("\n", to: .standardError)
        }
    }

    /// Clears the terminal line so a shard's own line can be printed, then redraws.
    func interrupt(_ print: () -> Void) {
        if mode == .terminal { Console.write("\r\u{1B}[2K", to: .standardError) }
        print()
        if mode == .terminal { draw() }
    }

    func snapshot() -> Snapshot {
        let current = state.withLock { $0 }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let rate = Double(current.processed) / max(seconds, 0.001)
        let remaining = max(0, expectedImages - current.images)
        return Snapshot(
            shardsDone: current.shardsDone, shards: shards, images: current.images, expectedImages: expectedImages,
            imagesPerSecond: rate,
            successRate: current.images > 0 ? Double(current.successes) / Double(current.images) : nil,
            etaSeconds: remaining == 0 ? 0 : (rate > 0 ? Double(remaining) / rate : nil))
    }

    private func draw() {
        let now = snapshot()
        switch mode {
        case .silent:
            return
        case .terminal:
            let success = now.successRate.map { String(format: "%.1f%%", 100 * $0) } ?? "–"
            let line = String(
                format: "shards %d/%d · %d/%d images · %.0f/s · %@ ok · ETA %@", now.shardsDone, now.shards,
                now.images, now.expectedImages, now.imagesPerSecond, success, now.etaSeconds.map(Self.duration) ?? "?")
            Console.write("\r\u{1B}[2K" + String(line.prefix(Console.terminalColumns - 1)), to: .standardError)
        case .json:
            let object: [String: Any] = [
                "event": "progress", "shards_done": now.shardsDone, "shards": now.shards, "images": now.images,
                "expected_images": now.expectedImages,
                "images_per_second": (now.imagesPerSecond * 10).rounded() / 10,
                "success_rate": now.successRate.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                "eta_seconds": now.etaSeconds.map { $0.rounded() as Any } ?? NSNull(),
            ]
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                Console.write(String(decoding: data, as: UTF8.self) + "\n", to: .standardOutput)
            }
        }
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
            : String(format: "%dm%02ds", total / 60, total % 60)
    }
}
