import CBenchCurl
import Foundation
import FoundationNetworking
import Synchronization
@_spi(Benchmarks) import WebImage

// The download clients. Each runs in its own child process (see Driver.swift), does its setup before
// the stopwatch starts (URL parsing, downloader or session creation), and reports one `Sample`.

/// Counts completions and bytes from any thread; `wait()` returns once `expected` completions arrived.
final class CompletionCounter: Sendable {
    private struct Counts {
        var completed = 0
        var failed = 0
        var bytes = 0
        var firstError: String?
    }
    private let counts = Mutex(Counts())
    private let done = DispatchSemaphore(value: 0)
    private let expected: Int

    init(expected: Int) {
        self.expected = expected
        if expected == 0 { done.signal() }
    }

    func record(bytes: Int, error: (any Error)?) {
        let finished = counts.withLock { counts -> Bool in
            counts.completed += 1
            if let error {
                counts.failed += 1
                if counts.firstError == nil { counts.firstError = "\(error)" }
            } else {
                counts.bytes += bytes
            }
            return counts.completed == expected
        }
        if finished { done.signal() }
    }

    func wait() { done.wait() }

    /// Records one transfer's outcome: its body size, or its error.
    func record(_ result: Result<Int, ImageDownloaderError>) {
        switch result {
        case .success(let bytes): record(bytes: bytes, error: nil)
        case .failure(let error): record(bytes: 0, error: error)
        }
    }

    /// Waits for every completion, reads `watch` at once, then runs `cleanup` and returns the sample
    /// (exiting if any download failed).
    func waitForSample(_ watch: Stopwatch, cleanup: () -> Void = {}) -> Sample {
        wait()
        let wall = watch.wallSeconds
        let cpu = watch.cpuSeconds
        cleanup()
        let totals = checkedTotals()
        return Sample(
            wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: totals.items, bytes: totals.bytes)
    }

    /// Successful completions and their bytes; exits the process if any download failed, so a broken
    /// run never turns into a number.
    func checkedTotals() -> (items: Int, bytes: Int) {
        counts.withLock { counts in
            if counts.failed > 0 {
                fail("\(counts.failed) of \(counts.completed) downloads failed; first: \(counts.firstError ?? "?")")
            }
            return (counts.completed - counts.failed, counts.bytes)
        }
    }
}

func parseURLs(_ strings: [String]) -> [URL] {
    strings.map { string in
        guard let url = URL(string: string) else { fail("not a URL: \(string)") }
        return url
    }
}

/// WebImage's full downloader path: every URL through `downloadImage`, `maxConcurrentDownloads` =
/// `parallel`; with `decode` false the `.avoidDecodeImage` option (bytes only).
func runWebImageClient(urls: [String], parallel: Int, decode: Bool, caBundle: String? = nil) -> Sample {
    let list = parseURLs(urls)
    var config = ImageDownloaderConfig.default
    config.maxConcurrentDownloads = parallel
    config.caBundlePath = caBundle
    let downloader = ImageDownloader(config: config)
    let counter = CompletionCounter(expected: list.count)
    let options: ImageDownloaderOptions = decode ? [] : [.avoidDecodeImage]
    let watch = Stopwatch()
    for url in list {
        downloader.downloadImage(with: url, options: options) { image, data, error, finished in
            guard finished else { return }
            if decode, error == nil, image == nil {
                counter.record(bytes: 0, error: BenchError("no image for \(url)"))
            } else {
                counter.record(bytes: data?.count ?? 0, error: error)
            }
        }
    }
    return counter.waitForSample(watch)
}

/// WebImage's transport without the downloader: the curl multi thread, the easy-handle wrapper and the
/// header parser, storing each body as the downloader does, `parallel` transfers in flight (each
/// completion starts the next, like `curl --parallel-max`). Issue 2's throughput check.
func runTransportClient(urls: [String], parallel: Int) -> Sample {
    let list = parseURLs(urls)
    let transport = makeTransportClient(parallel: parallel)
    let counter = CompletionCounter(expected: list.count)
    let next = Atomic<Int>(0)
    let watch = Stopwatch()
    @Sendable func launch() {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        guard index < list.count else { return }
        transport.fetch(list[index]) { result in
            counter.record(result)
            launch()
        }
    }
    for _ in 0..<parallel { launch() }
    return counter.waitForSample(watch) { transport.shutdown() }
}

/// WebImage's transport thread with at most `parallel` connections per host.
func makeTransportClient(parallel: Int) -> TransportBenchmarkClient {
    do {
        return try TransportBenchmarkClient(maxConnectionsPerHost: parallel)
    } catch {
        fail("transport client: \(error)")
    }
}

/// The physical limit: `wi_bench_curl_multi`, a C loop over one multi handle with `parallel` reused
/// easy handles that only counts bytes (with `store`, also copies each body into a buffer).
func runLibcurlClient(urls: [String], parallel: Int, store: Bool) -> Sample {
    let cStrings = urls.map { strdup($0) }
    defer { for string in cStrings { free(string) } }
    var result = wi_bench_curl_result()
    let watch = Stopwatch()
    let status = cStrings.map { UnsafePointer($0!) }.withUnsafeBufferPointer { pointers in
        wi_bench_curl_multi(pointers.baseAddress!, pointers.count, Int32(parallel), store ? 1 : 0, &result)
    }
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    guard status == 0, result.failures == 0 else {
        fail("libcurl client: status \(status), \(result.failures) failures")
    }
    return Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: Int(result.transfers), bytes: Int(result.bytes))
}

/// FoundationNetworking's `URLSession` with `parallel` data tasks in flight: each completion starts the
/// next task, and the session allows `parallel` connections to the host.
func runURLSessionClient(urls: [String], parallel: Int, caBundle: String? = nil) -> Sample {
    let list = parseURLs(urls)
    // FoundationNetworking reads its extra CA file from this variable when it makes its curl handles.
    if let caBundle { setenv("URLSessionCertificateAuthorityInfoFile", caBundle, 1) }
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = parallel
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    let session = URLSession(configuration: configuration)
    let counter = CompletionCounter(expected: list.count)
    let next = Mutex(0)

    @Sendable func startNext() {
        let index = next.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        guard index < list.count else { return }
        session.dataTask(with: list[index]) { data, response, error in
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            let failure: (any Error)? = error ?? (status == 200 ? nil : BenchError("HTTP \(status)"))
            counter.record(bytes: data?.count ?? 0, error: failure)
            startNext()
        }.resume()
    }

    let watch = Stopwatch()
    for _ in 0..<min(parallel, list.count) { startNext() }
    return counter.waitForSample(watch) { session.invalidateAndCancel() }
}

/// 10,000 requests over 100 URLs. With `suspended`, every request is made while the queue is
/// suspended (all overlap, so the ideal is exactly one transfer per URL); otherwise they are made as
/// fast as possible while downloads run. Extra numbers: transfers started (the downloader's
/// `imageDownloadStart` notifications) and the CPU and wall time of the `downloadImage` calls alone.
func runCoalescingClient(urls: [String], requests: Int, parallel: Int, suspended: Bool) -> Sample {
    let list = parseURLs(urls)
    var config = ImageDownloaderConfig.default
    config.maxConcurrentDownloads = parallel
    let downloader = ImageDownloader(config: config)
    let transfers = Atomic<Int>(0)
    let observer = NotificationCenter.default.addObserver(forName: .imageDownloadStart, object: nil, queue: nil) {
        _ in transfers.add(1, ordering: .relaxed)
    }
    let counter = CompletionCounter(expected: requests)
    downloader.isSuspended = suspended
    let watch = Stopwatch()
    for index in 0..<requests {
        downloader.downloadImage(with: list[index % list.count], options: [.avoidDecodeImage]) {
            _, data, error, finished in
            guard finished else { return }
            counter.record(bytes: data?.count ?? 0, error: error)
        }
    }
    let submitWall = watch.wallSeconds
    let submitCPU = watch.cpuSeconds
    downloader.isSuspended = false
    counter.wait()
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    // Notifications are posted asynchronously on the callback queue; let the last ones land.
    downloader.invalidate(cancelPendingDownloads: false)
    usleep(200_000)
    NotificationCenter.default.removeObserver(observer)
    let totals = counter.checkedTotals()
    var sample = Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: totals.items, bytes: totals.bytes)
    sample.extra["transfers"] = Double(transfers.load(ordering: .relaxed))
    sample.extra["submitCPUus"] = submitCPU * 1e6 / Double(requests)
    sample.extra["submitWallus"] = submitWall * 1e6 / Double(requests)
    return sample
}

/// Queues every URL at once (10,000 distinct ones) and reports the RSS right after queueing as well as
/// the peak while they all download.
func runQueuedMemoryClient(urls: [String], parallel: Int) -> Sample {
    let list = parseURLs(urls)
    var config = ImageDownloaderConfig.default
    config.maxConcurrentDownloads = parallel
    let downloader = ImageDownloader(config: config)
    let baseline = Stopwatch.currentRSSKiB()
    let counter = CompletionCounter(expected: list.count)
    let watch = Stopwatch()
    for url in list {
        downloader.downloadImage(with: url, options: [.avoidDecodeImage]) { _, data, error, finished in
            guard finished else { return }
            counter.record(bytes: data?.count ?? 0, error: error)
        }
    }
    let queued = Stopwatch.currentRSSKiB()
    counter.wait()
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    let totals = counter.checkedTotals()
    var sample = Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: totals.items, bytes: totals.bytes)
    sample.extra["baselineRSSKiB"] = Double(baseline)
    sample.extra["queuedRSSKiB"] = Double(queued)
    return sample
}

/// A failure the benchmark reports with its own words.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
