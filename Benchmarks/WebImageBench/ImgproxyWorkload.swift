import CBenchCodecs
import Foundation
import WebImage

/// imgproxy's own benchmark (github.com/imgproxy/image-servers-benchmark, its `k6.js` and `Makefile`): 100
/// photographs of about 2040×1400, each stored as JPEG, PNG, WebP and AVIF; every request fits one into
/// 512×512 and answers in the source's format (JPEG q80, PNG, WebP q75, AVIF q65), imgproxy's URL
/// `rs:fit:512:512/f:FORMAT/q:Q` against thumbor's `fit-in/512x512/filters:format(FORMAT):quality(Q)`.
/// imgproxy's run uses DIV2K's validation set and k6 with as many users as cores for 5 minutes; here the
/// photographs are `make bench-photos`' 100 (Debian packages' photographs, Benchmarks/photos/SOURCES.md), the
/// load is wrk at each concurrency (2 and 16 by default), and as in the 256×256 workload every request names
/// a source URL never asked before, so no cache answers.
///
/// The sources are made once from the photographs, as imgproxy's `prepare-dataset` makes them with vips:
/// JPEG at quality 75 and WebP at 75 (vips' defaults), PNG, and AVIF with quantizer 22 (vips' Q 65) at
/// avifenc's speed 9 (vips' effort 0). They are kept in `cache` (the photographs' folder's `formats/`).
struct ImgproxyWorkload {
    struct Format {
        var name: String
        var quality: Int
        var imageFormat: ImageFormat
    }

    static let formats = [
        Format(name: "jpg", quality: 80, imageFormat: .jpeg), Format(name: "png", quality: 80, imageFormat: .png),
        Format(name: "webp", quality: 75, imageFormat: .webp), Format(name: "avif", quality: 65, imageFormat: .avif),
    ]
    static let side = 512

    /// The photographs, `photo-000.jpg` …
    let photos: URL
    /// Where the four formats of each are kept between runs.
    var cache: URL { photos.appendingPathComponent("formats") }

    /// How many photographs there are.
    func count() throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: photos.path)
            .filter { $0.hasPrefix("photo-") && $0.hasSuffix(".jpg") }
        guard !names.isEmpty else { throw BenchError("no photo-NNN.jpg in \(photos.path): run `make bench-photos`") }
        return names.count
    }

    /// Makes (once) `cache/pN.{jpg,png,webp,avif}` for every photograph and links the folder into `www` as
    /// `/imgproxy/`. Returns the number of photographs.
    func prepare(into www: URL) throws -> Int {
        let total = try count()
        let fm = FileManager.default
        try fm.createDirectory(at: cache, withIntermediateDirectories: true)
        for index in 0..<total {
            let stem = cache.appendingPathComponent("p\(index)")
            let missing = Self.formats.contains { !fm.fileExists(atPath: stem.path + "." + $0.name) }
            guard missing else { continue }
            if index % 10 == 0 { log("imgproxy workload: making the sources of photo \(index) of \(total)") }
            let source = photos.appendingPathComponent(String(format: "photo-%03d.jpg", index))
            let image = try ImageDecoderRegistry.shared.decode(Data(contentsOf: source))
            guard let frame = image.frames.first else { throw BenchError("\(source.path) has no frame") }
            try write(frame, to: stem)
        }
        let link = www.appendingPathComponent("imgproxy")
        try? fm.removeItem(at: link)
        try fm.createSymbolicLink(at: link, withDestinationURL: cache)
        return total
    }

    /// The two single-source memory probes imgproxy publishes figures for: a 2000×1333 and a 7360×4912 JPEG
    /// (q90; the first from photograph 0, the second from the corpus's 36 MP astronaut), written into
    /// `www/memory/m0.jpg` and `m1.jpg`, with imgproxy's published peaks in bytes.
    static let memoryProbes: [(label: String, width: Int, height: Int, imgproxyBytes: Double)] = [
        ("2000×1333", 2000, 1333, 82e6), ("7360×4912", 7360, 4912, 271e6),
    ]

    func prepareMemoryProbes(into www: URL, corpusImages: URL) throws {
        let folder = www.appendingPathComponent("memory")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let sources = [
            photos.appendingPathComponent("photo-000.jpg"), corpusImages.appendingPathComponent("astronaut-36mp.jpg"),
        ]
        for (index, probe) in Self.memoryProbes.enumerated() {
            let image = try ImageDecoderRegistry.shared.decode(Data(contentsOf: sources[index]))
            guard let frame = image.frames.first else { throw BenchError("\(sources[index].path) has no frame") }
            let sized = Corpus.resize(frame, to: PixelSize(width: probe.width, height: probe.height))
            try sized.pixels.withUnsafeBufferPointer { pixels in
                guard let base = pixels.baseAddress else { throw BenchError("empty frame") }
                var output: UnsafeMutablePointer<UInt8>?
                var length = 0
                guard wi_bench_tj_encode(base, Int32(probe.width), Int32(probe.height), 90, &output, &length) == 0,
                    let jpeg = output
                else { throw BenchError("JPEG encode failed") }
                try Data(bytes: jpeg, count: length).write(to: folder.appendingPathComponent("m\(index).jpg"))
                wi_bench_tj_free(jpeg)
            }
        }
    }

    /// Milliseconds one thread takes to decode one of the PNG sources whole (the median of the first ten):
    /// what a PNG request costs before any resize, since a PNG cannot be decoded at a reduced size.
    func pngDecodeMilliseconds() throws -> Double {
        var times: [Double] = []
        for index in 0..<10 {
            let data = try Data(contentsOf: cache.appendingPathComponent("p\(index).png"))
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try ImageDecoderRegistry.shared.decode(data)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        return median(times)
    }

    private func write(_ frame: ImageFrame, to stem: URL) throws {
        try Corpus.writeJPEGWebPPNG(frame, to: stem.path, jpegQuality: 75, webpQuality: 75)
        let outcome = runChild([
            "avifenc", "-s", "9", "-j", "2", "--min", "22", "--max", "22", stem.path + ".png", stem.path + ".avif",
        ])
        guard outcome.status == 0 else { throw BenchError("avifenc failed (status \(outcome.status))") }
    }
}

extension ServeBenchmark {
    /// The services of imgproxy's workload for `format`: `webimage serve` and thumbor.
    func imgproxyServices(_ format: ImgproxyWorkload.Format, webimageArguments: [String] = []) -> [Service] {
        let source = origin.baseURL + "/imgproxy/p"
        let middle = ".\(format.name)%3Fn%3D"
        let answer = Answer(format: format.imageFormat, side: ImgproxyWorkload.side, fits: true)
        let side = ImgproxyWorkload.side
        var webimage = self.webimage(warm: false, extra: webimageArguments)
        webimage.prefix = "/insecure/rs:fit:\(side):\(side)/f:\(format.name)/q:\(format.quality)/plain/" + source
        webimage.middle = middle
        webimage.answer = answer
        webimage.format = format.name
        var thumbor = services()[1]
        let thumborFormat = format.name == "jpg" ? "jpeg" : format.name
        thumbor.prefix =
            "/unsafe/fit-in/\(side)x\(side)/filters:format(\(thumborFormat)):quality(\(format.quality))/" + source
        thumbor.middle = middle
        thumbor.answer = answer
        thumbor.format = format.name
        return [webimage, thumbor]
    }

    /// One service's peak memory for one request.
    struct MemoryRow {
        var service: String
        var label: String
        var peakBytes = 0.0
        var note = ""
    }

    /// For each memory probe and each service: a freshly started service answers one request fitting the
    /// probe into 512×512 as JPEG q80, then its processes' peak resident memory is read.
    func singleSourceMemory() -> [MemoryRow] {
        var rows: [MemoryRow] = []
        let jpeg = ImgproxyWorkload.formats[0]
        for (index, probe) in ImgproxyWorkload.memoryProbes.enumerated() {
            // imgproxy's own source-resolution limit (50 MP) instead of serve's 16.8 MP, so the 36 MP probe
            // is processed, as imgproxy's figure for it was.
            for var service in imgproxyServices(jpeg, webimageArguments: ["--max-source-pixels", "50000000"]) {
                service.prefix = service.prefix.replacingOccurrences(of: "/imgproxy/p", with: "/memory/m")
                var row = MemoryRow(service: service.name, label: probe.label)
                let port = ServiceProcess.freePort()
                switch service.start(port) {
                case .failure(let error):
                    row.note = error.description
                case .success(let process):
                    cleanup.track(process)
                    let url = "http://127.0.0.1:\(port)" + service.prefix + "\(index)" + service.middle + "memory"
                    if let problem = check(url, answer: service.answer) {
                        row.note = problem
                    } else {
                        row.peakBytes = process.peakResidentBytes()
                    }
                    process.stop()
                    cleanup.untrack(process)
                }
                log(
                    "imgproxy workload: \(service.name), one \(probe.label) source: \(fmt(row.peakBytes / 1e6, 1)) MB \(row.note)"
                )
                rows.append(row)
            }
        }
        return rows
    }

    /// Every format, every service, every concurrency, `settings.rounds` times (the order of the services
    /// rotating from round to round).
    func runImgproxy(photos: Int) -> [ServeRow] {
        var rows: [ServeRow] = []
        var unavailable: Set<String> = []
        var filled = true
        for round in 0..<settings.rounds {
            for format in ImgproxyWorkload.formats {
                let services = imgproxyServices(format)
                for offset in services.indices {
                    let service = services[(offset + round) % services.count]
                    let key = service.name + " " + format.name
                    guard !unavailable.contains(key) else { continue }
                    log("imgproxy workload, round \(round + 1) of \(settings.rounds): \(service.name), \(format.name)")
                    let measured = measure(service, round: round, filled: &filled, photos: photos)
                    if measured.contains(where: { !$0.measured }) { unavailable.insert(key) }
                    rows += measured
                }
            }
        }
        return rows
    }
}

/// The imgproxy-workload section of docs/BENCHMARKS.md; `make bench-serve-imgproxy` replaces only the text
/// between its two markers.
struct ImgproxySection {
    static let begin = "<!-- imgproxy workload: begin (make bench-serve-imgproxy rewrites up to the end marker) -->"
    static let end = "<!-- imgproxy workload: end -->"

    let rows: [ServeRow]
    let memory: [ServeBenchmark.MemoryRow]
    /// One thread's decode of one PNG source, in ms.
    let pngDecodeMilliseconds: Double
    let photos: Int
    let command: String
    let date: String
    let load: String
    let settings: ServeBenchmark.Settings
    let versions: [(String, String)]

    func markdown() -> String {
        var text = Self.begin + "\n\n## imgproxy's benchmark workload: `webimage serve` against thumbor\n\n"
        text += "Generated by `\(command)` on \(date) (load average at start / end: \(load)); do not edit by hand.\n\n"
        text += "```\n\(command)\n```\n\n"
        text += "imgproxy's own benchmark (github.com/imgproxy/image-servers-benchmark): \(photos) photographs, each "
        text += "stored as JPEG (q75), PNG, WebP (q75) and AVIF (quantizer 22, speed 9), as its `prepare-dataset` "
        text += "makes them with vips; each request fits one into \(ImgproxyWorkload.side)×\(ImgproxyWorkload.side) "
        text += "and answers in its format: JPEG q80, PNG, WebP q75, AVIF q65. The photographs are "
        text += "`make bench-photos`' (Debian packages' photographs fitted into 2040×1400, "
        text += "Benchmarks/photos/SOURCES.md) where imgproxy uses DIV2K's validation set (2040×1356 and near). "
        text += "`webimage serve --allow-unsigned --allow-destination 127.0.0.0/8` is asked "
        text += "`/insecure/rs:fit:512:512/f:FORMAT/q:Q/plain/SOURCE`; thumbor 7.8 (PIL engine, `--processes "
        text += "\(ServeBenchmark.cores)`, originals not stored) `/unsafe/fit-in/512x512/filters:format(FORMAT):"
        text += "quality(Q)/SOURCE`. imgproxy's runs use k6 with one user per core for 5 minutes; here `wrk -t"
        text += "\(ServeBenchmark.wrkThreads) -c<concurrency> -d\(settings.seconds)s --latency` after a "
        text += "\(settings.warmupSeconds) s warm-up, \(settings.rounds) round(s), every request naming a source URL "
        text += "never asked before (a new query string the origin ignores), so no cache answers.\n\n"
        text += "requests/s counts successful answers per second (median over the rounds); p50, p95 and p99 are "
        text += "wrk's (median over the rounds); CPU per image is the user + system time of the service's processes "
        text += "÷ successful answers; peak RSS is the sum of the service's processes' VmHWM at the end of the run "
        text += "(its peak since it started, this format's lower concurrency included; `webimage serve` encodes AVIF "
        text += "in child processes, and those alive at that moment count too); errors are totals.\n\n"
        text += "| format | concurrency | service | requests/s | p50 ms | p95 ms | p99 ms | CPU ms/image "
        text += "| peak RSS MiB | errors |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
        for format in ImgproxyWorkload.formats {
            for concurrency in settings.concurrencies {
                let here = rows.filter { $0.format == format.name && $0.concurrency == concurrency }
                for service in Array(Set(here.map(\.service))).sorted() {
                    let runs = here.filter { $0.service == service }
                    let measured = runs.filter(\.measured)
                    guard !measured.isEmpty else {
                        text += "| \(format.name) | \(concurrency) | \(service) | not measured: "
                        text += "\(runs.first?.note ?? "?") | | | | | | |\n"
                        continue
                    }
                    func middle(_ value: (ServeRow) -> Double) -> Double { median(measured.map(value)) }
                    let errors = measured.map { $0.httpErrors + $0.socketErrors }.reduce(0, +)
                    text += "| \(format.name) | \(concurrency) | \(service) | \(fmt(middle(\.requestsPerSecond), 1)) "
                    text += "| \(fmt(middle(\.p50Milliseconds), 1)) | \(fmt(middle(\.p95Milliseconds), 1)) "
                    text += "| \(fmt(middle(\.p99Milliseconds), 1)) | \(fmt(middle(\.cpuMillisecondsPerImage), 1)) "
                    text += "| \(fmt(middle(\.peakRSSMegabytes), 0)) | \(errors) |\n"
                }
            }
        }
        text +=
            "\n" + memoryTable() + "\n" + verdicts() + "\nVersions: "
            + versions.map { "\($0.0) \($0.1)" }.joined(separator: "; ") + ".\n\n"
        return text + Self.end + "\n"
    }

    private func memoryTable() -> String {
        var text = "Peak memory for one source: each service started afresh, asked once to fit the source into "
        text += "512×512 as JPEG q80, then the peak resident memory of its processes read (VmHWM, MB = 10⁶ "
        text += "bytes), beside imgproxy's published figures; `webimage serve` runs with `--max-source-pixels "
        text +=
            "50000000` (imgproxy's 50 MP default) so the 36 MP source is not refused by its 16.8 MP one.\n\n| source | service | peak RSS MB | imgproxy's |\n"
        text += "|---|---|---:|---:|\n"
        for row in memory {
            let published = ImgproxyWorkload.memoryProbes.first { $0.label == row.label }?.imgproxyBytes ?? 0
            let value = row.note.isEmpty ? fmt(row.peakBytes / 1e6, 1) : "not measured: \(row.note)"
            text += "| \(row.label) JPEG | \(row.service) | \(value) | \(fmt(published / 1e6, 0)) |\n"
        }
        return text
    }

    /// The issue's targets, met or missed, with the measured reason for a miss.
    private func verdicts() -> String {
        var text = "Targets:\n\n"
        let webimage = "webimage serve"
        for format in ImgproxyWorkload.formats {
            let here = rows.filter { $0.format == format.name && $0.concurrency == 2 && $0.measured }
            let ours = median(here.filter { $0.service == webimage }.map(\.requestsPerSecond))
            let theirs = median(here.filter { $0.service != webimage }.map(\.requestsPerSecond))
            guard ours > 0, theirs > 0 else {
                text += "- \(format.name), concurrency 2, ≥ 2× thumbor's requests/s: not measured.\n"
                continue
            }
            let ratio = ours / theirs
            text += "- \(format.name), concurrency 2, ≥ 2× thumbor's requests/s: **\(ratio >= 2 ? "met" : "missed")**"
            text += " (\(fmt(ratio, 2))×)"
            if ratio < 2, format.name == "png" {
                let cpu = median(here.filter { $0.service == webimage }.map(\.cpuMillisecondsPerImage))
                let thumborCPU = median(here.filter { $0.service != webimage }.map(\.cpuMillisecondsPerImage))
                text += ". Measured: `webimage serve` spends \(fmt(cpu, 0)) ms of CPU per PNG answer (thumbor: "
                text += "\(fmt(thumborCPU, 0)) ms), so twice thumbor's rate on two cores would need under "
                text += "\(fmt(thumborCPU / 2, 0)) ms; decoding one 2040×1400 PNG source whole takes "
                text += "\(fmt(pngDecodeMilliseconds, 0)) ms of it on one thread (PNG has no reduced-size decode, "
                text += "as JPEG's DCT scaling is), and the rest is the full-size resample, the PNG encode and the "
                text += "fetch, not broken down here"
            }
            text += ".\n"
        }
        for probe in ImgproxyWorkload.memoryProbes {
            guard let row = memory.first(where: { $0.label == probe.label && $0.service == webimage }),
                row.note.isEmpty
            else {
                text += "- peak RSS for one \(probe.label) source ≤ \(fmt(probe.imgproxyBytes / 1e6, 0)) MB: not "
                text += "measured.\n"
                continue
            }
            let met = row.peakBytes <= probe.imgproxyBytes
            text += "- peak RSS for one \(probe.label) source ≤ \(fmt(probe.imgproxyBytes / 1e6, 0)) MB: "
            text += "**\(met ? "met" : "missed")** (\(fmt(row.peakBytes / 1e6, 1)) MB).\n"
        }
        return text
    }

    /// `document` with this section replacing its previous one, or added at the end.
    func splice(into document: String) -> String {
        let section = markdown()
        if let start = document.range(of: Self.begin), let stop = document.range(of: Self.end + "\n") {
            return document.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: section)
        }
        return document + "\n" + section
    }
}

/// `WebImageBench serve-bench --workload imgproxy --photos DIR` (`make bench-serve-imgproxy`).
struct ImgproxyDriver {
    var settings = ServeBenchmark.Settings(rounds: 1, seconds: 20, warmupSeconds: 3, concurrencies: [2, 16])
    var output = "docs/BENCHMARKS.md"
    var photos = ".bench-photos/photos"
    var command = "make bench-serve-imgproxy"

    func run() {
        let loadAtStart = Environment.loadAverage()
        let root = Driver.makeTemporaryDirectory()
        let cleanup = Cleanup(root: root)
        cleanup.installSignalHandlers()
        let corpus = Corpus(root: root, sourceDirectory: URL(fileURLWithPath: "Tests/Fixtures/corpus/images"))
        let workload = ImgproxyWorkload(photos: URL(fileURLWithPath: photos, isDirectory: true))
        let count: Int
        do {
            try FileManager.default.createDirectory(at: corpus.www, withIntermediateDirectories: true)
            count = try workload.prepare(into: corpus.www)
            try workload.prepareMemoryProbes(
                into: corpus.www, corpusImages: URL(fileURLWithPath: "Tests/Fixtures/corpus/images"))
        } catch { cleanup.abort("imgproxy workload: \(error)") }
        let nginx: NginxServer
        do { nginx = try NginxServer.forBenchmarks(serving: corpus.www) } catch { cleanup.abort("\(error)") }
        cleanup.nginx = nginx
        let bench = ServeBenchmark(
            settings: settings, root: root, corpus: corpus, origin: nginx, webimageCLI: Driver.webimageCLI,
            thumbor: Driver.thumbor, cleanup: cleanup)
        let rows = bench.runImgproxy(photos: count)
        let memory = bench.singleSourceMemory()
        let decode: Double
        do { decode = try workload.pngDecodeMilliseconds() } catch { cleanup.abort("PNG decode: \(error)") }
        let section = ImgproxySection(
            rows: rows, memory: memory, pngDecodeMilliseconds: decode, photos: count, command: command,
            date: ISO8601DateFormatter().string(from: Date()),
            load: loadAtStart + " / " + Environment.loadAverage(), settings: settings, versions: bench.versions())
        cleanup.finish()
        ServeDriver.replaceSection(of: output, with: section.splice(into:))
        log("wrote the imgproxy workload section of \(output)")
    }
}
