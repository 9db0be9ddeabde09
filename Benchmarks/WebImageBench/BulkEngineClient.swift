import Foundation
import Synchronization
import WebImage
import WebImageDataset

/// The dataset workload's `webimage bulk` job run in this process (`WebImageBench bulk-engine --urls FILE
/// --output DIR`): the list's photos downloaded, filled to 256² (`center_crop`), encoded as JPEG q95 into
/// webdataset tars of 1,000 samples with their jsonl and parquet, 64 connections. The same engine and
/// settings as the command's, for the callgrind profile (valgrind 3.19 cannot start the `webimage`
/// executable itself).
func runBulkEngineClient(urls: String, output: String) -> Sample {
    var settings = BulkSettings()
    settings.concurrency = 64
    settings.resize = BulkResize(mode: .centerCrop, size: 256)
    // As `--encode jpeg` without `--optimize-jpeg`.
    settings.encoder = JPEGEncoder(quality: 95, optimizesHuffmanTables: false)
    var config = ImageDownloaderConfig()
    config.maxConcurrentDownloads = settings.rowsUnderWay
    config.maximumTotalConnections = 64
    config.maximumConnectionsPerHost = 64
    config.cookieStorage = nil
    let downloader = ImageDownloader(config: config)
    let directory = URL(fileURLWithPath: output)
    let watch = Stopwatch()
    let result = Mutex<Result<BulkRunSummary, Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let columns = BulkColumns()
            let plan = try BulkPlan.settle(
                try BulkPlan.make(
                    input: urls, columns: columns, maxLineBytes: TextRowReader.defaultMaxLineBytes, shardSize: 1000,
                    format: "webdataset"), in: directory)
            let engine = BulkEngine(
                input: urls, plan: plan, assigned: Array(0..<plan.shards), directory: directory,
                downloader: downloader, settings: settings, columns: columns)
            let summary = try await engine.run()
            result.withLock { $0 = .success(summary) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    downloader.invalidate(cancelPendingDownloads: false)
    downloader.waitUntilInvalidated()
    switch result.withLock({ $0 }) {
    case .success(let summary):
        guard summary.failed == 0 else { fail("bulk-engine: \(summary.failed) rows failed") }
        return Sample(
            wall: watch.wallSeconds, cpu: watch.cpuSeconds, maxRSSKiB: Stopwatch.peakRSSKiB(),
            items: summary.succeeded, bytes: 0)
    case .failure(let error):
        fail("bulk-engine: \(error)")
    case nil:
        fail("bulk-engine: no result")
    }
}
