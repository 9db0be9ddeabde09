import Foundation
import WebImage
import WebImageDataset

/// The README's example of the bulk engine used from Swift, compiled here with the test target, which has the
/// `Tools` trait's WebImageDataset: `make test-readme` checks that the README's block is these lines, word for
/// word. It is not run (it reads a `laion.parquet` in the working folder).
enum READMEBulkEngineExample {
    static func main() async throws {
        // README: begin
        let directory = URL(fileURLWithPath: "dataset", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let columns = BulkColumns(url: "URL", caption: "TEXT", saved: ["similarity"])
        let plan = try BulkPlan.settle(
            try BulkPlan.make(
                input: "laion.parquet", columns: columns, maxLineBytes: 1 << 20, shardSize: 10_000,
                format: "webdataset"),
            in: directory)
        var settings = BulkSettings()
        settings.savedColumns = columns.saved
        settings.writesCaptions = true
        settings.encoder = JPEGEncoder(quality: 90)
        let engine = BulkEngine(
            input: "laion.parquet", plan: plan, assigned: Array(0..<plan.shards), directory: directory,
            settings: settings, columns: columns)
        let printing = Task {
            for await event in engine.events {
                if case .shardFinished(let stats) = event {
                    print("shard \(stats.shard): \(stats.successes) of \(stats.count)")
                }
            }
        }
        let summary = try await engine.run()
        await printing.value
        print("\(summary.written) shard(s) written")
        // README: end
    }
}
