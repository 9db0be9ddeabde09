import Foundation
import WebImageDataset

/// Renders a bulk run's ``BulkEvent``s.
///
/// - On a terminal (stderr) the progress is a live line, redrawn at each progress event (four a second);
///   a finished shard's line is printed above it.
/// - With `--json` each event is a JSON line on stdout: `{"event":"progress",…}`, `{"event":"shard",…}`
///   (the shard's stats), `{"event":"busy",…}`.
/// - Otherwise only finished shards and busy ones print a line (stderr); a shard line's images/s counts
///   the images it saved, not its failed rows.
final class BulkRenderer: Sendable {
    enum Mode: Sendable { case silent, terminal, json }

    private let mode: Mode
    private let json: Bool

    init(mode: Mode, json: Bool) {
        self.mode = mode
        self.json = json
    }

    /// Renders `events` until they end; `snapshot` gives the totals for redrawing the terminal line.
    func render(_ events: AsyncStream<BulkEvent>, snapshot: @Sendable () -> BulkProgressSnapshot) async {
        for await event in events {
            switch event {
            case .progress(let now):
                draw(now)
            case .shardFinished(let stats):
                interrupt(snapshot) { report(stats) }
            case .retryingShards(let reason, let retry, let of):
                interrupt(snapshot) {
                    if json {
                        Self.writeJSONLine(["event": "retry", "reason": reason, "retry": retry, "of": of])
                    } else {
                        Console.write(
                            "webimage bulk: \(reason); running the shards not done again (retry \(retry) of \(of))\n",
                            to: .standardError)
                    }
                }
            case .shardBusy(let stem, let owner):
                interrupt(snapshot) {
                    if json {
                        Self.writeJSONLine(["event": "busy", "shard": stem, "owner": owner])
                    } else {
                        Console.write(
                            "shard \(stem): skipped, another process (\(owner)) is writing it\n", to: .standardError)
                    }
                }
            }
        }
    }

    /// On a terminal, draws the last line and ends it.
    func finish(_ now: BulkProgressSnapshot) {
        guard mode == .terminal else { return }
        draw(now)
        Console.write("\n", to: .standardError)
    }

    /// Clears the terminal line so a line can be printed, then redraws.
    private func interrupt(_ snapshot: () -> BulkProgressSnapshot, _ print: () -> Void) {
        if mode == .terminal { Console.write("\r\u{1B}[2K", to: .standardError) }
        print()
        if mode == .terminal { draw(snapshot()) }
    }

    private func report(_ stats: BulkShardStats) {
        if json {
            guard let data = try? JSONEncoder().encode(stats),
                var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return }
            object["event"] = "shard"
            Self.writeJSONLine(object)
        } else {
            let failed = stats.count - stats.successes
            Console.write(
                String(
                    format: "shard %05d: %d of %d ok, %d failed, %.1f MB, %.1f s (%.0f images/s)\n", stats.shard,
                    stats.successes, stats.count, failed, Double(stats.bytes) / 1e6, stats.duration,
                    Double(stats.successes) / max(stats.duration, 0.001)), to: .standardError)
        }
    }

    private func draw(_ now: BulkProgressSnapshot) {
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
            Self.writeJSONLine([
                "event": "progress", "shards_done": now.shardsDone, "shards": now.shards, "images": now.images,
                "expected_images": now.expectedImages,
                "images_per_second": (now.imagesPerSecond * 10).rounded() / 10,
                "success_rate": now.successRate.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                "eta_seconds": now.etaSeconds.map { $0.rounded() as Any } ?? NSNull(),
            ])
        }
    }

    /// One line of `--json` output on stdout.
    static func writeJSONLine(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        Console.write(String(decoding: data, as: UTF8.self) + "\n", to: .standardOutput)
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%dh%02dm", total / 3600, total % 3600 / 60)
            : String(format: "%dm%02ds", total / 60, total % 60)
    }
}
