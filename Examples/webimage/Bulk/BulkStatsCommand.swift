import ArgumentParser
import Foundation
import WebImageDataset

extension WebImageCLI {
    /// `webimage bulk-stats DIR`: the totals of every finished shard's stats file.
    struct BulkStats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bulk-stats", abstract: "Sum the stats of the finished shards in a bulk output directory.")

        @Argument(help: "The directory `webimage bulk` wrote.")
        var directory: String

        @Flag(help: "Print JSON.")
        var json = false

        /// Exits with 2, and a message, for a directory that does not exist and for stats whose counts
        /// do not add up to an `Int` (a damaged or forged file): never a crash, never zeros.
        func run() throws {
            do {
                try summarize()
            } catch let error as CLIError {
                Console.write("webimage bulk-stats: \(error.description)\n", to: .standardError)
                throw ExitCode(2)
            }
        }

        private func summarize() throws {
            let url = URL(fileURLWithPath: directory, isDirectory: true)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue
            else { throw CLIError("'\(directory)' is not a directory") }
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            } catch {
                throw CLIError("cannot read '\(directory)': \(error.localizedDescription)")
            }
            var total = BulkShardStats(shard: -1)
            var shards = 0
            var retried = 0
            var recovered = 0
            // Wall time: from the first shard's start to the last one's end, retries included; shards run
            // side by side, so the sum of their durations overstates it.
            var firstStart: Double?
            var lastEnd: Double?
            for name in names.sorted() where name.hasSuffix("_stats.json") {
                guard let data = try? Data(contentsOf: url.appendingPathComponent(name)),
                    let stats = try? JSONDecoder().decode(BulkShardStats.self, from: data)
                else { continue }
                if let started = stats.started, let finished = stats.finished, started.isFinite, finished.isFinite,
                    started <= finished
                {
                    firstStart = min(firstStart ?? started, started)
                    lastEnd = max(lastEnd ?? finished, finished)
                }
                func add(_ value: Int, to sum: inout Int) throws {
                    let (result, overflow) = sum.addingReportingOverflow(value)
                    guard !overflow, value >= 0 else { throw CLIError("\(name): counts out of range (\(value))") }
                    sum = result
                }
                if name.contains("-retry") {
                    // A retry's rows were already counted as failures of their shard.
                    try add(stats.count, to: &retried)
                    try add(stats.successes, to: &recovered)
                    continue
                }
                shards += 1
                try add(stats.count, to: &total.count)
                try add(stats.successes, to: &total.successes)
                try add(stats.bytes, to: &total.bytes)
                total.duration += stats.duration
                for (code, count) in stats.failures { try add(count, to: &total.failures[code, default: 0]) }
            }
            let plan = (try? Data(contentsOf: url.appendingPathComponent("plan.json")))
                .flatMap { try? JSONDecoder().decode(BulkPlan.self, from: $0) }
            let wall = firstStart.flatMap { start in lastEnd.map { $0 - start } }
            if json {
                let object: [String: Any] = [
                    "wallSeconds": wall.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                    "shardsDone": shards, "shardsPlanned": plan?.shards ?? NSNull(), "count": total.count,
                    "successes": total.successes, "failures": total.failures, "bytes": total.bytes,
                    "duration": total.duration, "retried": retried, "recovered": recovered,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print("shards done: \(shards)\(plan.map { " of \($0.shards)" } ?? "")")
            print(
                "images: \(total.count), ok \(total.successes) (\(String(format: "%.1f", 100 * Double(total.successes) / Double(max(1, total.count))))%)"
            )
            for (code, count) in total.failures.sorted(by: { $0.value > $1.value }) { print("  \(code): \(count)") }
            print(String(format: "bytes: %.1f MB", Double(total.bytes) / 1e6))
            print(
                "wall time: "
                    + (wall.map { Bulk.seconds($0) + " (first shard start to last shard end)" }
                        ?? "unknown (stats without start and end times)"))
            print(String(format: "shard time: %.1f s (summed over shards that ran side by side)", total.duration))
            if retried > 0 { print("retried with --retry-failed: \(retried) row(s), \(recovered) recovered") }
        }
    }
}
