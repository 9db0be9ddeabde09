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
        /// do not add up to an `Int` (a damaged or forged file): never a crash, never zeros. Reads stats in
        /// img2dataset's fields and in the ones runs wrote before them.
        func run() throws {
            let totals: BulkStatsTotals
            do {
                totals = try BulkStatsTotals.sum(directory: directory)
            } catch let error as BulkInputError {
                Console.write("webimage bulk-stats: \(error.description)\n", to: .standardError)
                throw ExitCode(2)
            }
            let total = totals.total
            if json {
                let object: [String: Any] = [
                    "wallSeconds": totals.wallSeconds.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                    "shardsDone": totals.shards, "shardsPlanned": totals.plannedShards ?? NSNull(),
                    "count": total.count, "successes": total.successes, "failures": total.failures,
                    "failedToDownload": total.failedToDownload, "failedToResize": total.failedToResize,
                    "bytes": total.bytes, "bytesDownloaded": total.bytesDownloaded, "duration": total.duration,
                    "retried": totals.retried,
                    "recovered": totals.recovered,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print("shards done: \(totals.shards)\(totals.plannedShards.map { " of \($0)" } ?? "")")
            print(
                "images: \(total.count), ok \(total.successes) (\(String(format: "%.1f", 100 * Double(total.successes) / Double(max(1, total.count))))%)"
            )
            print("failed to download: \(total.failedToDownload), failed to resize: \(total.failedToResize)")
            for (code, count) in total.failures.sorted(by: { $0.value > $1.value }) { print("  \(code): \(count)") }
            print(
                String(
                    format: "bytes: %.1f MB saved, %.1f MB downloaded", Double(total.bytes) / 1e6,
                    Double(total.bytesDownloaded) / 1e6))
            print(
                "wall time: "
                    + (totals.wallSeconds.map { Bulk.seconds($0) + " (first shard start to last shard end)" }
                        ?? "unknown (stats without start and end times)"))
            print(String(format: "shard time: %.1f s (summed over shards that ran side by side)", total.duration))
            if totals.retried > 0 {
                print("retried with --retry-failed: \(totals.retried) row(s), \(totals.recovered) recovered")
            }
        }
    }
}
