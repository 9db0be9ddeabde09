import Foundation

/// Turns the samples of every round into docs/BENCHMARKS.md. Each number is the median over rounds;
/// each ratio is the median of the per-round ratios (the two clients ran back to back in that round).
struct Report {
    let rounds: Int
    let command: String
    let results: [String: [Sample]]
    let profiles: [Profile]
    /// The serve workload's section (nil when `--no-serve`).
    let serve: ServeSection?
    let environment: Environment
    /// `webimage bulk` under callgrind (nil when valgrind or the CLI is missing, or `--no-profile`).
    var bulkProfile: BulkProfile? = nil

    /// A target and what this run measured against it.
    struct Verdict {
        var target: String
        var measured: String
        var met: Bool
        /// For a missed target: the measurement in this run that explains it (empty when none does).
        var why = ""
    }

    func samples(_ workload: String, _ client: String) -> [Sample] { results["\(workload)/\(client)"] ?? [] }

    func med(_ workload: String, _ client: String, _ value: (Sample) -> Double) -> Double {
        median(samples(workload, client).map(value))
    }

    /// Median over rounds of `value(a) / value(b)`, pairing the samples of the same round.
    func ratio(_ workload: String, _ a: String, _ b: String, _ value: (Sample) -> Double) -> Double {
        median(zip(samples(workload, a), samples(workload, b)).map { value($0) / max(value($1), 1e-12) })
    }

    // MARK: Tables

    private func transferTable(_ workload: String, title: String) -> String {
        var text = "### \(title)\n\n"
        text += "| client | files/s | MB/s | CPU µs/file | peak RSS MB | WebImage ÷ client (files/s) |\n"
        text += "|---|---:|---:|---:|---:|---:|\n"
        for client in [
            "WebImage", "WebImage transport alone", "libcurl multi", "libcurl multi, stores bodies", "curl --parallel",
            "URLSession",
        ] {
            let r = client == "WebImage" ? "—" : fmt(ratio(workload, "WebImage", client, \.itemsPerSecond), 2) + "×"
            text += "| \(client) | \(fmt(med(workload, client, \.itemsPerSecond), 0)) "
            text += "| \(fmt(med(workload, client, \.megabytesPerSecond), 0)) "
            text += "| \(fmt(med(workload, client, \.cpuMicrosecondsPerItem), 1)) "
            text += "| \(fmt(med(workload, client) { Double($0.maxRSSKiB) / 1024 }, 1)) | \(r) |\n"
        }
        return text + "\n"
    }

    /// The HTTP/2 row (issue 17): the small files over HTTPS with h2, with the connections each client used.
    private func http2Table() -> String {
        var text = "### 2,000 × 20 KiB files over HTTPS with HTTP/2, concurrency 6\n\n"
        text += "Same nginx, its `http2` TLS listener; every client verifies the certificate. Connections are "
        text += "counted from nginx's access log (`$connection`), per run. URLSession cannot be given a CA on "
        text += "Linux, so it runs in a private mount namespace whose system CA bundle also holds nginx's "
        text += "certificate (`Driver.trustingLauncher`).\n\n"
        text += "| client | files/s | CPU µs/file | connections used | peak RSS MB | WebImage ÷ client (files/s) |\n"
        text += "|---|---:|---:|---:|---:|---:|\n"
        for client in ["WebImage", "curl --parallel", "URLSession"] {
            let r = client == "WebImage" ? "—" : fmt(ratio("small-h2", "WebImage", client, \.itemsPerSecond), 2) + "×"
            let connections = samples("small-h2", client).map { Int($0.extra["connections"] ?? -1) }
            text += "| \(client) | \(fmt(med("small-h2", client, \.itemsPerSecond), 0)) "
            text += "| \(fmt(med("small-h2", client, \.cpuMicrosecondsPerItem), 1)) | \(range(connections)) "
            text += "| \(fmt(med("small-h2", client) { Double($0.maxRSSKiB) / 1024 }, 1)) | \(r) |\n"
        }
        return text + "\n"
    }

    /// What the design's building blocks cost alone, against the small-file CPU target.
    private func floorTable() -> String {
        let transfer = med("small", "libcurl multi, stores bodies", \.cpuMicrosecondsPerItem)
        let operation = med("floor", "operation per file", \.cpuMicrosecondsPerItem)
        let notifications = med("floor", "four notifications per file", \.cpuMicrosecondsPerItem)
        let webImage = med("small", "WebImage", \.cpuMicrosecondsPerItem)
        var text = "### The floor of an operation-per-download design, per small file\n\n"
        text += "The transfer itself (the libcurl loop that stores bodies, from the table above) plus the two "
        text += "building blocks the downloader's design requires around every download, each measured alone "
        text += "in its own "
        text += "process on \(Driver.floorItems) items, with no network and no WebImage code.\n\n"
        text += "| part | CPU µs/file |\n|---|---:|\n"
        text += "| libcurl multi, stores bodies (the transfer) | \(fmt(transfer, 1)) |\n"
        text += "| one asynchronous `Operation` on corelibs' `OperationQueue` (6 slots), finished from another "
        text += "thread | \(fmt(operation, 1)) |\n"
        text += "| four `NotificationCenter` posts, each sent on a serial callback queue | \(fmt(notifications, 1)) |\n"
        let floor = transfer + operation + notifications
        text += "| **sum: what the design costs before any code of WebImage's own** | **\(fmt(floor, 1))** |\n"
        text += "| WebImage, everything (for comparison) | \(fmt(webImage, 1)) |\n"
        text += "| target | 25.0 |\n\n"
        return text
    }

    /// The design floor with a network: the same 2,000 files through WebImage's transport with an
    /// `Operation` per file, then with the callback queue and notifications, against WebImage and curl.
    private func networkFloorTable() -> String {
        var text = "### The floor of the design with a network, 2,000 × 20 KiB files\n\n"
        text += "The same files, in the same rounds, through WebImage's transport (the \"transport alone\" row) "
        text += "with only what the downloader's design puts around each transfer (an Operation per download "
        text += "and its notifications), and no WebImage downloader code: "
        text += "every URL as one asynchronous `Operation` on corelibs' `OperationQueue` (6 slots, all added at "
        text += "once, finished from the transport thread), then also the Start, ReceiveResponse, Stop and Finish "
        text += "notifications and the completion on a serial callback queue (Start when the transfer starts, the "
        text += "rest in one block at the end; blocks sent while a drain is pending join it). "
        text += "Source: `Benchmarks/WebImageBench/FloorClients.swift`.\n\n"
        text += "| client | files/s | CPU µs/file | ÷ curl --parallel (files/s) | WebImage ÷ client (files/s) |\n"
        text += "|---|---:|---:|---:|---:|\n"
        for client in ["WebImage transport alone", Driver.floorBare, Driver.floorFull, "WebImage"] {
            let toCurl = ratio("small", client, "curl --parallel", \.itemsPerSecond)
            let r = client == "WebImage" ? "—" : fmt(ratio("small", "WebImage", client, \.itemsPerSecond), 2) + "×"
            text += "| \(client) | \(fmt(med("small", client, \.itemsPerSecond), 0)) "
            text += "| \(fmt(med("small", client, \.cpuMicrosecondsPerItem), 1)) | \(fmt(toCurl, 2))× | \(r) |\n"
        }
        return text + "\n"
    }

    private func photoTable() -> String {
        let a = "WebImage download+decode"
        let b = "decode only, 2 threads"
        var text = "### Download + decode of 2 MP photos (JPEG, WebP, PNG; 72 images per run)\n\n"
        text += "| client | images/s | MB/s (compressed) | CPU µs/image | peak RSS MB | ÷ decode only |\n"
        text += "|---|---:|---:|---:|---:|---:|\n"
        for client in [a, b] {
            let r = client == a ? fmt(ratio("photos", a, b, \.itemsPerSecond), 2) + "×" : "—"
            text += "| \(client) | \(fmt(med("photos", client, \.itemsPerSecond), 1)) "
            text += "| \(fmt(med("photos", client, \.megabytesPerSecond), 1)) "
            text += "| \(fmt(med("photos", client, \.cpuMicrosecondsPerItem), 0)) "
            text += "| \(fmt(med("photos", client) { Double($0.maxRSSKiB) / 1024 }, 1)) | \(r) |\n"
        }
        return text + "\n"
    }

    private func decoderTable() -> String {
        var text = "### Decoders alone, one thread, same bytes (8 images × \(Driver.decoderPasses) passes per run)\n\n"
        text += "Time per image is CPU time (one thread, so it equals wall time on an idle machine; unlike wall time "
        text += "it does not count waiting for a core while other work runs). libheif decodes HEVC on libde265's "
        text += "worker thread while the calling thread waits, so the HEIC row counts that thread, on both sides.\n\n"
        text += "| format | WebImage ms/image | C library ms/image | C library call | WebImage ÷ C (time) |\n"
        text += "|---|---:|---:|---|---:|\n"
        let calls = [
            "jpg": "tjDecompress2 → RGBA", "webp": "WebPDecodeRGBA", "png": "png_image_finish_read → RGBA",
            "avif": "avifDecoderNextImage + avifImageYUVToRGB", "jxl": "JxlDecoder → RGBA8, one thread",
            "heic": "heif_decode_image → interleaved RGBA",
        ]
        for ext in Corpus.photoFormats + Corpus.nextGenerationFormats {
            let workload = "decoder-\(ext)"
            let perImage: (Sample) -> Double = { $0.cpu / Double(max($0.items, 1)) * 1000 }
            text += "| \(ext) | \(fmt(med(workload, "WebImage decoder", perImage), 2)) "
            text += "| \(fmt(med(workload, "C library", perImage), 2)) | \(calls[ext] ?? "") "
            text += "| \(fmt(ratio(workload, "WebImage decoder", "C library", perImage), 3))× |\n"
        }
        return text + "\n"
    }

    private func thumbnailTable() -> String {
        var text = "### Thumbnails: 2 MP JPEG → 256×256 fill → JPEG q85, one thread "
        text += "(8 images × \(Driver.decoderPasses) passes per run)\n\n"
        text += "WebImage: shrink-on-load decode (DCT scaling), `ImageTransformer.resize(mode: .fill)` (Lanczos-3), "
        text += "`JPEGEncoder(quality: 85)`. vipsthumbnail: `VIPS_CONCURRENCY=1 vipsthumbnail --size 256x256 "
        text += "--smartcrop centre -o %s.jpg[Q=85]`. Pillow: `Image.thumbnail` to the covering size (draft mode + "
        text += "LANCZOS), centre crop, `save(quality=85)`. The external programs are measured from outside, minus "
        text += "the same program run on no file (start-up).\n\n"
        text += "| client | CPU ms/image | wall ms/image | peak RSS MB | WebImage ÷ client (CPU/image) |\n"
        text += "|---|---:|---:|---:|---:|\n"
        let perImage: (Sample) -> Double = { $0.cpu / Double(max($0.items, 1)) * 1000 }
        for client in ["WebImage", "vipsthumbnail", "Pillow"] where !samples("thumbnail", client).isEmpty {
            let r = client == "WebImage" ? "—" : fmt(ratio("thumbnail", "WebImage", client, perImage), 2) + "×"
            text += "| \(client) | \(fmt(med("thumbnail", client, perImage), 2)) "
            text += "| \(fmt(med("thumbnail", client) { $0.wall / Double(max($0.items, 1)) * 1000 }, 2)) "
            text += "| \(fmt(med("thumbnail", client) { Double($0.maxRSSKiB) / 1024 }, 1)) | \(r) |\n"
        }
        if samples("thumbnail", "Pillow").isEmpty {
            text += "\nPillow did not run: `make deps-bench` creates `.venv-bench` with it.\n"
        }
        return text + "\n"
    }

    private func coalescingTable() -> String {
        var text = "### 10,000 requests over 100 URLs (WebImage, `avoidDecodeImage`)\n\n"
        text += "| variant | transfers (downloader) | requests nginx served | downloadImage call µs/request "
        text += "| CPU µs/request (total) | wall ms |\n|---|---:|---:|---:|---:|---:|\n"
        for client in ["all requests overlapping", "requests made while downloading"] {
            let s = samples("coalescing", client)
            let transfers = s.map { Int($0.extra["transfers"] ?? -1) }
            let served = s.map { Int($0.extra["serverRequests"] ?? -1) }
            text += "| \(client) | \(range(transfers)) | \(range(served)) "
            text += "| \(fmt(med("coalescing", client) { $0.extra["submitCPUus"] ?? 0 }, 2)) "
            text += "| \(fmt(med("coalescing", client, \.cpuMicrosecondsPerItem), 2)) "
            text += "| \(fmt(med("coalescing", client) { $0.wall * 1000 }, 0)) |\n"
        }
        text += "\n\"All requests overlapping\" makes the 10,000 calls with the downloader suspended, then resumes it: "
        text += "every request overlaps its URL's transfer, so the ideal is one transfer per URL. The other variant "
        text += "makes the calls while downloads run; a request that arrives after its URL's transfer finished "
        text += "correctly starts a new one. Transfers are shown as min–max over the rounds.\n\n"
        return text
    }

    private func memoryTable() -> String {
        var text = "### Memory\n\n| case | peak RSS MB | RSS before the work MB | detail |\n|---|---:|---:|---|\n"
        let queued = "10,000 queued downloads"
        let queuedRSS = med("memory", queued) { $0.extra["queuedRSSKiB"] ?? 0 } / 1024
        text += "| \(queued) | \(fmt(med("memory", queued) { Double($0.maxRSSKiB) / 1024 }, 1)) "
        text += "| \(fmt(med("memory", queued) { ($0.extra["baselineRSSKiB"] ?? 0) / 1024 }, 1)) "
        let baseline = med("memory", queued) { ($0.extra["baselineRSSKiB"] ?? 0) / 1024 }
        let perDownload = (queuedRSS - baseline) * 1024 / Double(Driver.queuedDownloads)
        text += "| RSS right after the 10,000 calls: \(fmt(queuedRSS, 1)) MB, "
        text += "≈ \(fmt(perDownload, 1)) KiB per queued download |\n"
        for client in ["54 MP JPEG, download + scale-down", "54 MP JPEG, decode file + scale-down"] {
            guard let s = samples("memory", client).first else { continue }
            let bitmap = (s.extra["width"] ?? 0) * (s.extra["height"] ?? 0) * 4 / 1_048_576
            let compressed = Double(s.bytes) / 1_048_576
            text += "| \(client) | \(fmt(med("memory", client) { Double($0.maxRSSKiB) / 1024 }, 1)) "
            text += "| \(fmt(med("memory", client) { ($0.extra["baselineRSSKiB"] ?? 0) / 1024 }, 1)) "
            text += "| 9000×6000 → \(Int(s.extra["width"] ?? 0))×\(Int(s.extra["height"] ?? 0)); bitmap "
            text += "\(fmt(bitmap, 1)) MB + compressed \(fmt(compressed, 1)) MB; "
            text += "limit 2×(sum) = \(fmt(2 * (bitmap + compressed), 1)) MB |\n"
        }
        return text + "\n(MB here is MiB: 1,048,576 bytes; MB/s in the throughput tables is 10⁶ bytes/s.)\n\n"
    }

    private func bulkTable() -> String {
        guard !samples("bulk-memory", "1000").isEmpty else { return "" }
        var text = "### `webimage bulk`: peak RSS against the number of URLs (run once)\n\n"
        text += "`webimage bulk LIST --size 32 --concurrency 64 --per-host 64` over a 64×48 PNG under distinct query "
        text += "strings (every URL downloaded, resized, encoded and written to a tar).\n\n"
        text += "| URLs | peak RSS MB | images/s | CPU ms/image |\n|---:|---:|---:|---:|\n"
        for count in Driver.bulkCounts {
            guard let s = samples("bulk-memory", String(count)).first else { continue }
            text += "| \(count) | \(fmt(Double(s.maxRSSKiB) / 1024, 1)) | \(fmt(s.itemsPerSecond, 0)) "
            text += "| \(fmt(s.cpu / Double(max(s.items, 1)) * 1000, 2)) |\n"
        }
        return text + "\n"
    }

    private func datasetTable() -> String {
        guard !samples("dataset", "img2dataset").isEmpty else { return "" }
        var text = "### `webimage bulk` against img2dataset 1.47\n\n"
        text += "2,000 URLs of the 2 MP JPEGs (distinct query strings) from the same nginx, each "
        text += "cropped to 256×256 (shorter side to 256, then the centre) and encoded as JPEG q95 into webdataset "
        text += "tars of 1,000 samples. img2dataset: `--resize_mode center_crop --image_size 256 --output_format "
        text += "webdataset --encode_quality 95`, one process per core (multiprocessing distributor) × 32 threads; "
        text += "`webimage bulk --resize-mode fill --size 256 --encode jpeg --quality 95 --concurrency 64`, one "
        text += "process. Both write each image's EXIF into its record (both tools' default). "
        text += "Wall and CPU are the whole command's (start-up and worker processes included), median "
        text += "of \(samples("dataset", "img2dataset").count) interleaved rounds.\n\n"
        text += "| client | images | images/s | CPU ms/image | webimage bulk ÷ client (images/s) |\n"
        text += "|---|---:|---:|---:|---:|\n"
        for client in ["webimage bulk", "img2dataset"] {
            let r =
                client == "webimage bulk"
                ? "—" : fmt(ratio("dataset", "webimage bulk", client, \.itemsPerSecond), 2) + "×"
            let images = samples("dataset", client).map(\.items)
            text += "| \(client) | \(range(images)) | \(fmt(med("dataset", client, \.itemsPerSecond), 0)) "
            text += "| \(fmt(med("dataset", client) { $0.cpu / Double(max($0.items, 1)) * 1000 }, 2)) | \(r) |\n"
        }
        return text + "\n" + perCoreTable()
    }

    /// Images per core at 0.5, 2 and 8 MP: images per CPU-second of the whole command (what one core
    /// turns out when the job is CPU-bound, as img2dataset's "about 100 per core" counts), and images/s
    /// divided by the cores.
    private func perCoreTable() -> String {
        let jobs = [
            ("0.5 MP (816×612)", "dataset-0.5mp"), ("2 MP (1632×1224)", "dataset"), ("8 MP (3264×2448)", "dataset-8mp"),
        ]
        guard jobs.allSatisfy({ !samples($0.1, "img2dataset").isEmpty }) else { return "" }
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        var text = "#### Images per core by source size\n\n"
        text += "The same job over JPEGs of three sizes (2,000 URLs at 0.5 and 2 MP, 500 at 8 MP; the 8 MP ones are "
        text += "the 2 MP photos upscaled 2×). Images per CPU-second is what one core turns out (the job is "
        text += "CPU-bound); images/s per core divides the throughput by the \(Int(cores)) cores. Medians of "
        text += "\(samples("dataset", "img2dataset").count) rounds.\n\n"
        text += "| source | bulk images/CPU-s | img2dataset images/CPU-s | bulk images/s per core | "
        text += "img2dataset images/s per core | bulk ÷ img2dataset (images/s) |\n|---|---:|---:|---:|---:|---:|\n"
        for (label, workload) in jobs {
            let perCPU = { (client: String) in self.med(workload, client) { Double($0.items) / max($0.cpu, 1e-9) } }
            text += "| \(label) | \(fmt(perCPU("webimage bulk"), 0)) | \(fmt(perCPU("img2dataset"), 0)) | "
            text += "\(fmt(med(workload, "webimage bulk", \.itemsPerSecond) / cores, 0)) | "
            text += "\(fmt(med(workload, "img2dataset", \.itemsPerSecond) / cores, 0)) | "
            text += "\(fmt(ratio(workload, "webimage bulk", "img2dataset", \.itemsPerSecond), 2))× |\n"
        }
        return text + "\n"
    }

    // MARK: Targets

    func verdicts() -> [Verdict] {
        var list: [Verdict] = []
        func add(_ target: String, _ value: Double, _ digits: Int, _ unit: String, _ met: Bool) {
            list.append(Verdict(target: target, measured: fmt(value, digits) + unit, met: met))
        }
        func explain(_ why: String) {
            if let last = list.indices.last, !list[last].met { list[last].why = why }
        }
        let small = { (client: String) in ratio("small", "WebImage", client, \.itemsPerSecond) }
        // The design floor with a network, against the same baselines in the same rounds.
        let floorToLibcurl = ratio("small", Driver.floorFull, "libcurl multi", \.itemsPerSecond)
        let floorToCurl = ratio("small", Driver.floorFull, "curl --parallel", \.itemsPerSecond)
        let bareToCurl = ratio("small", Driver.floorBare, "curl --parallel", \.itemsPerSecond)
        let floorCPU = med("small", Driver.floorFull, \.cpuMicrosecondsPerItem)
        let ofFloor = ratio("small", "WebImage", Driver.floorFull, \.itemsPerSecond)
        add(
            "small files: ≥ 0.7× libcurl multi (files/s)", small("libcurl multi"), 2, "×", small("libcurl multi") >= 0.7
        )
        if floorToLibcurl < 0.7 {
            explain(
                "the design's floor with a network reaches \(fmt(floorToLibcurl, 2))× libcurl multi; WebImage is "
                    + "\(fmt(ofFloor, 2))× that floor (network floor table)")
        }
        add("small files: ≥ 1.0× curl --parallel", small("curl --parallel"), 2, "×", small("curl --parallel") >= 1.0)
        if floorToCurl < 1.0 {
            explain(
                "the design's floor with a network reaches \(fmt(floorToCurl, 2))× curl --parallel, and "
                    + "\(fmt(bareToCurl, 2))× with the `Operation` alone; WebImage is \(fmt(ofFloor, 2))× that floor "
                    + "(network floor table)")
        }
        add("small files: ≥ 6× URLSession", small("URLSession"), 2, "×", small("URLSession") >= 6)
        let transportAlone = ratio("small", "WebImage transport alone", "curl --parallel", \.itemsPerSecond)
        add(
            "small files, transport alone (issue 2): ≥ 0.7× curl --parallel", transportAlone, 2, "×",
            transportAlone >= 0.7)
        let cpu = med("small", "WebImage", \.cpuMicrosecondsPerItem)
        add("small files: ≤ 25 µs CPU per file", cpu, 1, " µs", cpu <= 25)
        let parts =
            med("small", "libcurl multi, stores bodies", \.cpuMicrosecondsPerItem)
            + med("floor", "operation per file", \.cpuMicrosecondsPerItem)
            + med("floor", "four notifications per file", \.cpuMicrosecondsPerItem)
        if parts > 25 || floorCPU > 25 {
            explain(
                "the design's parts, each alone, sum to \(fmt(parts, 1)) µs; its floor with a network uses "
                    + "\(fmt(floorCPU, 1)) µs (floor tables)")
        }
        let large = ratio("large", "WebImage", "libcurl multi", \.megabytesPerSecond)
        add("5 MB files: ≥ 0.8× libcurl multi (MB/s)", large, 2, "×", large >= 0.8)
        let stored = ratio("large", "WebImage", "libcurl multi, stores bodies", \.megabytesPerSecond)
        if stored >= 0.8 {
            explain(
                "the libcurl client never touches its bodies; against the same loop storing them WebImage "
                    + "measures \(fmt(stored, 2))× (5 MiB table; analysis below)")
        }
        let photos = ratio("photos", "WebImage download+decode", "decode only, 2 threads", \.itemsPerSecond)
        add("download+decode 2 MP: ≥ 0.85× decode-only on 2 cores", photos, 2, "×", photos >= 0.85)
        list += decoderVerdicts()
        let thumbnailCPU: (Sample) -> Double = { $0.cpu / Double(max($0.items, 1)) }
        let vips = ratio("thumbnail", "WebImage", "vipsthumbnail", thumbnailCPU)
        add("thumbnail 2 MP → 256 fill → JPEG: ≤ 1.0× vipsthumbnail (CPU/image)", vips, 2, "×", vips <= 1.0)
        if !samples("thumbnail", "Pillow").isEmpty {
            let pillow = ratio("thumbnail", "Pillow", "WebImage", thumbnailCPU)
            add("thumbnail: ≥ 3× faster than Pillow (CPU/image)", pillow, 2, "×", pillow >= 3)
            let decode = med("thumbnail", "WebImage") { $0.extra["decodeMs"] ?? 0 }
            let total = med("thumbnail", "WebImage") { $0.cpu / Double(max($0.items, 1)) * 1000 }
            let pillowTotal = med("thumbnail", "Pillow") { $0.cpu / Double(max($0.items, 1)) * 1000 }
            explain(
                "libjpeg's DCT-scaled decode alone takes \(fmt(decode, 2)) of WebImage's \(fmt(total, 2)) ms per "
                    + "image, and Pillow's draft mode runs the same libjpeg decode; 3× Pillow (\(fmt(pillowTotal / 3, 2)) "
                    + "ms) would leave \(fmt(pillowTotal / 3 - decode, 2)) ms for the resize and the JPEG encode")
        }
        if !samples("thumbnail", "WebImage").isEmpty {
            let decode = med("thumbnail", "WebImage") { $0.extra["decodeMs"] ?? 0 }
            let total = med("thumbnail", "WebImage") { $0.cpu / Double(max($0.items, 1)) * 1000 }
            add(
                "thumbnail: the work beyond the decode (resize, crop, encode) ≤ 1.5 ms (CPU/image − decode)",
                total - decode, 2, " ms", total - decode <= 1.5)
        }
        if let small = samples("bulk-memory", "1000").first, let large = samples("bulk-memory", "100000").first {
            let growth = Double(large.maxRSSKiB) / Double(max(small.maxRSSKiB, 1))
            add(
                "bulk: peak RSS at 100,000 URLs ≤ 1.25× at 1,000 (does not grow with the count)", growth, 2, "×",
                growth <= 1.25)
        }
        list += datasetVerdicts()
        let transfers = samples("coalescing", "all requests overlapping").map { Int($0.extra["transfers"] ?? -1) }
        list.append(
            Verdict(
                target: "10,000 requests / 100 URLs: exactly 100 transfers", measured: range(transfers),
                met: !transfers.isEmpty && transfers.allSatisfy { $0 == 100 }))
        let queued = med("memory", "10,000 queued downloads") { Double($0.maxRSSKiB) / 1024 }
        add("10,000 queued downloads: ≤ 64 MB peak RSS", queued, 1, " MB", queued <= 64)
        let queuedBaseline = med("memory", "10,000 queued downloads") { ($0.extra["baselineRSSKiB"] ?? 0) / 1024 }
        explain(
            "\(fmt(queuedBaseline, 1)) MB of it is the process before any download (its libraries: libavif with its "
                + "AV1 codecs, libjxl and LittleCMS came with the image pipeline); the 10,000 downloads add "
                + "\(fmt(queued - queuedBaseline, 1)) MB (memory table)")
        if let s = samples("memory", "54 MP JPEG, download + scale-down").first {
            let limit = 2 * ((s.extra["width"] ?? 0) * (s.extra["height"] ?? 0) * 4 + Double(s.bytes)) / 1_048_576
            let peak = med("memory", "54 MP JPEG, download + scale-down") { Double($0.maxRSSKiB) / 1024 }
            add(
                "54 MP JPEG scale-down: peak RSS ≤ \(fmt(limit, 1)) MB (2 × (bitmap + bytes))", peak, 1, " MB",
                peak <= limit)
        }
        return list
    }

    /// The dataset workload's two targets (none when img2dataset did not run).
    func datasetVerdicts() -> [Verdict] {
        guard !samples("dataset", "img2dataset").isEmpty else { return [] }
        let faster = ratio("dataset", "webimage bulk", "img2dataset", \.itemsPerSecond)
        let cpu = med("dataset", "webimage bulk") { $0.cpu / Double(max($0.items, 1)) * 1000 }
        return [
            Verdict(
                target: "bulk: ≥ 4× img2dataset's images/s (2,000 × 2 MP → 256² JPEG webdataset)",
                measured: fmt(faster, 2) + "×", met: faster >= 4),
            Verdict(
                target: "bulk: ≤ 5.5 ms CPU per image (same workload)", measured: fmt(cpu, 2) + " ms", met: cpu <= 5.5),
        ]
    }

    /// One target per decoder workload: WebImage's decoder within 1.15× the C library's CPU time per image.
    func decoderVerdicts() -> [Verdict] {
        let libraries = ["avif": "libavif", "jxl": "libjxl", "heic": "libheif"]
        return (Corpus.photoFormats + Corpus.nextGenerationFormats).map { ext in
            let r = ratio("decoder-\(ext)", "WebImage decoder", "C library") { $0.cpu / Double(max($0.items, 1)) }
            let baseline = libraries[ext].map { "\($0) called directly" } ?? "the C library's time"
            return Verdict(target: "decoder \(ext): ≤ 1.15× \(baseline)", measured: fmt(r, 3) + "×", met: r <= 1.15)
        }
    }

    // MARK: Output

    func markdown() -> String {
        var text = "# WebImage benchmarks\n\n"
        text += "Generated by `\(command)` on \(environment.date) — do not edit by hand; rerun the command.\n"
        text += "Every client ran in its own process against one local nginx, interleaved, in \(rounds) rounds "
        text += "(the order of the clients rotates each round). Numbers are medians over the rounds; ratios are "
        text += "medians of the per-round ratios. Concurrency is 6 for every download client.\n\n"
        text += "## Command\n\n```\n\(command)\n```\n\n"
        text += "which runs `swift build -c release --package-path Benchmarks --product webimage` (and `--product "
        text += "WebImageBench`), then `WEBIMAGE_CLI=Benchmarks/.build/release/webimage "
        text += "Benchmarks/.build/release/WebImageBench run --rounds \(rounds) --output docs/BENCHMARKS.md`.\n\n"
        text += "## Machine and versions\n\n| | |\n|---|---|\n"
        for (name, value) in environment.machine + environment.versions { text += "| \(name) | \(value) |\n" }
        text += "\n## Targets\n\n| target | measured | | measured explanation of a miss |\n|---|---:|---|---|\n"
        for verdict in verdicts() {
            text +=
                "| \(verdict.target) | \(verdict.measured) | \(verdict.met ? "met" : "**missed**") | \(verdict.why) |\n"
        }
        text += "\n## Results\n\n"
        text += transferTable("small", title: "2,000 × 20 KiB files, concurrency 6") + floorTable()
        text += networkFloorTable()
        text += transferTable("large", title: "20 × 5 MiB files, concurrency 6")
        text += http2Table()
        text +=
            photoTable() + decoderTable() + thumbnailTable() + coalescingTable() + memoryTable() + bulkTable()
            + datasetTable() + bulkProfileSection()
        text += clientNotes()
        if let serve { text += serve.markdown() + "\n" }
        text += profileSection()
        if let notes = try? String(contentsOfFile: "Benchmarks/NOTES.md", encoding: .utf8) {
            text += "\n" + notes
        }
        return text
    }

    /// `--only dataset`'s report: the machine, the bulk comparison's targets and table, and its callgrind
    /// profile.
    func datasetMarkdown() -> String {
        partialMarkdown(
            title: "`webimage bulk` against img2dataset", workloads: "the dataset workload",
            rounds: samples("dataset", "img2dataset").count, section: "dataset", verdicts: datasetVerdicts(),
            results: datasetTable() + bulkProfileSection())
    }

    /// The report of `run --only decoders`: the machine, the decoder targets and the decoder table.
    func decoderMarkdown() -> String {
        partialMarkdown(
            title: "decoders alone", workloads: "the decoder workloads", rounds: rounds, section: "decoders",
            verdicts: decoderVerdicts(), results: decoderTable())
    }

    /// A report of one `--only` section: what made it, the machine, its targets and its `results`.
    private func partialMarkdown(
        title: String, workloads: String, rounds: Int, section: String, verdicts: [Verdict], results: String
    ) -> String {
        var text = "# WebImage benchmarks: \(title)\n\n"
        text += "Generated by `\(command)` on \(environment.date): \(workloads) of `make bench` only, in \(rounds) "
        text += "interleaved rounds (`WebImageBench run --only \(section)`). The full report is docs/BENCHMARKS.md.\n\n"
        text += "## Machine and versions\n\n| | |\n|---|---|\n"
        for (name, value) in environment.machine + environment.versions { text += "| \(name) | \(value) |\n" }
        text += "\n## Targets\n\n| target | measured | |\n|---|---:|---|\n"
        for verdict in verdicts {
            text += "| \(verdict.target) | \(verdict.measured) | \(verdict.met ? "met" : "**missed**") |\n"
        }
        return text + "\n## Results\n\n" + results
    }

    private func clientNotes() -> String {
        """
        ### The clients

        - **WebImage**: `ImageDownloader` (`maxConcurrentDownloads` 6), every URL through `downloadImage` with \
        `.avoidDecodeImage` (photos: without it, so each image is decoded), all requests made at once.
        - **libcurl multi**: a C loop (`Benchmarks/CBenchCurl`) over one multi handle with 6 reused easy \
        handles whose write callback only counts bytes — the physical limit of libcurl on this machine. \
        **libcurl multi, stores bodies**: the same loop also copying each body into a buffer sized from \
        Content-Length (what any client that hands the bytes to its caller must at least do; not a target).
        - **curl --parallel**: `curl --parallel --parallel-max 6 --config <list>` writing to /dev/null; \
        measured from outside (wall time and CPU include starting curl, about 2 ms).
        - **WebImage transport alone**: the downloader's curl thread, easy-handle wrapper and header parser \
        without the downloader; each completion starts the next transfer on the transport thread. \
        **floor: …**: the design floor with a network (`FloorClients.swift`): that transport with one \
        `Operation` per URL on corelibs' `OperationQueue`, then also the callback queue and four notifications.
        - **URLSession**: FoundationNetworking, an ephemeral session allowing 6 connections per host, with 6 \
        data tasks in flight (each completion starts the next).
        - **decode only**: the same bytes, already in memory, decoded by `ImageDecoderRegistry.shared` on 2 \
        threads. **C library**: the library called directly from the harness on the same bytes.

        CPU time is user + system of the client process (all threads) over the workload only; peak RSS is the \
        process's `ru_maxrss`. nginx runs one worker on the same two cores and its CPU is not counted.


        """
    }

    private func profileSection() -> String {
        guard !profiles.isEmpty else { return "## Profile\n\nvalgrind was not installed; no profile was taken.\n" }
        var text = "## Profile (callgrind, small files)\n\n"
        text += "Instructions per file = (Ir of a \(Profiler.longRun)-file run − Ir of a \(Profiler.shortRun)-file "
        text += "run) ÷ \(Profiler.longRun - Profiler.shortRun), so process start-up cancels out (the 5 MiB row: "
        text += "one run's total ÷ 20, start-up included).\n\n"
        text += "| client | instructions per file |\n|---|---:|\n"
        for profile in profiles { text += "| \(profile.client) | \(fmt(profile.instructionsPerFile, 0)) |\n" }
        for profile in profiles where !profile.breakdown.isEmpty {
            text += "\n### \(profile.client): where the instructions per file go (inclusive, same subtraction)\n\n"
            text += "| function | instructions per file | share of WebImage's per-file total |\n|---|---:|---:|\n"
            for entry in profile.breakdown {
                let share = entry.perFile / max(profile.instructionsPerFile, 1) * 100
                text += "| \(entry.label) | \(fmt(entry.perFile, 0)) | \(fmt(share, 1)) % |\n"
            }
        }
        for profile in profiles {
            text += "\n### \(profile.client): functions by self cost\n\n"
            text += "```\n\(profile.topSelf)```\n"
            if !profile.topInclusive.isEmpty {
                text += "\n### \(profile.client): functions by inclusive cost\n\n```\n\(profile.topInclusive)```\n"
            }
        }
        return text
    }

    /// The target table (every target unless `verdicts` is given) as plain text for the terminal.
    func summary(_ verdicts: [Verdict]? = nil) -> String {
        (verdicts ?? self.verdicts()).map { "\($0.met ? "met   " : "MISSED") \($0.target): \($0.measured)" }
            .joined(separator: "\n")
    }

    private func range(_ values: [Int]) -> String {
        guard let low = values.min(), let high = values.max() else { return "—" }
        return low == high ? "\(low)" : "\(low)–\(high)"
    }
}

func fmt(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
