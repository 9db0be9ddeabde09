import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `WebImageBench run`: generates the file set, starts nginx, runs every client of every workload in
/// interleaved rounds (each client a child process), profiles WebImage's small-file path, stops nginx,
/// removes the temporary directory and writes the report.
struct Driver {
    var rounds = 7
    var output = "docs/BENCHMARKS.md"
    var corpusSource = "Tests/Fixtures/corpus/images"
    var profile = true
    var command = "make bench"
    /// The serve workload's durations (`--serve-seconds`, `--serve-warmup`); `--no-serve` skips it.
    var serve = ServeBenchmark.Settings()
    var runsServe = true
    /// `--only decoders` or `--only dataset`: one section alone (``runDecoders()``, ``runDataset()``); nil
    /// runs everything.
    var only: Section?

    /// A part of the run that `--only` can select.
    enum Section: String {
        case decoders
        case dataset
    }

    static let parallel = 6
    static let coalescingRequests = 10_000
    static let coalescingURLs = 100
    static let queuedDownloads = 10_000
    static let decoderPasses = 5
    static let bulkCounts = [1_000, 100_000]
    /// The `webimage` executable for the bulk workload (`make bench` builds it and sets WEBIMAGE_CLI).
    static var webimageCLI: String? {
        guard let path = ProcessInfo.processInfo.environment["WEBIMAGE_CLI"],
            FileManager.default.isExecutableFile(atPath: path)
        else { return nil }
        return path
    }
    /// The Python with Pillow that `make deps-bench` sets up (nil when it is missing: no Pillow client).
    static var benchPython: String? {
        let path = FileManager.default.currentDirectoryPath + "/.venv-bench/bin/python3"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
    /// The bulk comparison: 2,000 URLs of the 2 MP JPEGs (distinct query strings), three rounds.
    static let datasetURLs = 2_000
    static let datasetRounds = 3
    /// img2dataset from PyPI, which `make deps-bench` installs into .venv-bench (nil when missing).
    static var img2dataset: String? {
        let path = FileManager.default.currentDirectoryPath + "/.venv-bench/bin/img2dataset"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
    /// thumbor, which `make deps-bench` installs into .venv-bench (nil when missing).
    static var thumbor: String? {
        let path = FileManager.default.currentDirectoryPath + "/.venv-bench/bin/thumbor"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }
    /// Items of the no-network floor clients: enough for about 0.1 s of CPU, well above rusage's noise.
    static let floorItems = 20_000
    /// The design floor with a network (FloorClients.swift): an `Operation` per transfer over WebImage's
    /// transport, without and with the callback queue and the four notifications.
    static let floorBare = "floor: transport + an Operation per file"
    static let floorFull = "floor: transport + Operation + callback queue + 4 notifications"

    /// One client of one workload: how to run it once.
    struct Client {
        var name: String
        var run: () -> Sample
    }

    /// A workload and its clients, run in a rotated order each round.
    struct Workload {
        var name: String
        var clients: [Client]
    }

    func run() {
        if only == .decoders { return runDecoders() }
        if only == .dataset { return runDataset() }
        let loadAtStart = Environment.loadAverage()
        let root = Self.makeTemporaryDirectory()
        let cleanup = Cleanup(root: root)
        cleanup.installSignalHandlers()
        let corpus = Corpus(root: root, sourceDirectory: URL(fileURLWithPath: corpusSource))
        log("generating the file set in \(root.path)")
        do { try corpus.generate() } catch { cleanup.abort("file set: \(error)") }
        let nginx = Self.startNginx(serving: corpus, cleanup: cleanup)

        let lists = ListWriter(directory: root.appendingPathComponent("lists"), baseURL: nginx.baseURL)
        let workloads = makeWorkloads(corpus: corpus, lists: lists, nginx: nginx)
        var results = runRounds(workloads)
        // Once, not per round: `webimage bulk` over 1,000 and 100,000 URLs (the tiny image under distinct
        // query strings), for its peak RSS.
        if let cli = Self.webimageCLI {
            for count in Self.bulkCounts {
                log("webimage bulk, \(count) URLs")
                let list = lists.write(
                    "bulk-\(count)", paths: (0..<count).map { "\(corpus.tinyPath)?n=\($0)" })
                let output = root.appendingPathComponent("bulk-out-\(count)").path
                defer { try? FileManager.default.removeItem(atPath: output) }
                let outcome = runChild([
                    cli, "bulk", list, "--allow-destination", "127.0.0.0/8", "--output", output, "--size", "32",
                    "--concurrency", "64", "--per-host", "64",
                ])
                guard outcome.status == 0 else { cleanup.abort("webimage bulk failed: \(outcome.stdout)") }
                results["bulk-memory/\(count)", default: []].append(
                    Sample(
                        wall: outcome.wall, cpu: outcome.cpu, maxRSSKiB: outcome.maxRSSKiB, items: count, bytes: 0))
            }
        }
        if let cli = Self.webimageCLI, let img2dataset = Self.img2dataset {
            runDatasetComparison(
                cli: cli, img2dataset: img2dataset, corpus: corpus, lists: lists, root: root, cleanup: cleanup,
                rounds: Self.datasetRounds, results: &results)
        }
        var serveSection: ServeSection?
        if runsServe {
            let loadBefore = Environment.loadAverage()
            let bench = ServeBenchmark(
                settings: serve, root: root, corpus: corpus, origin: nginx, webimageCLI: Self.webimageCLI,
                thumbor: Self.thumbor, cleanup: cleanup)
            serveSection = bench.run(command: command, loadAtStart: loadBefore)
        }
        var profiles: [Profile] = []
        var bulkProfile: BulkProfile?
        if profile {
            log("profiling with callgrind")
            profiles = Profiler(lists: lists, corpus: corpus).run()
            log("profiling the bulk job with callgrind")
            bulkProfile = BulkProfiler(lists: lists, corpus: corpus, root: root).run()
        }
        cleanup.finish()

        let report = Report(
            rounds: rounds, command: command, results: results, profiles: profiles, serve: serveSection,
            environment: Environment.capture(loadAtStart: loadAtStart), bulkProfile: bulkProfile)
        // The DNS section comes from `make bench-dns` (it needs root and a namespace of its own): kept as the
        // last one wrote it.
        var markdown = report.markdown()
        if let existing = try? String(contentsOfFile: output, encoding: .utf8),
            let section = DNSDriver.section(in: existing)
        {
            markdown = DNSDriver.splice(section, into: markdown)
        }
        do {
            try markdown.write(toFile: output, atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(output): \(error)")
        }
        print(report.summary())
        log("wrote \(output)")
    }

    /// A temporary directory with the 2 MP photos only (for an `--only` section), and the cleanup that
    /// removes it (and stops what it is given) on exit or a signal.
    func preparePhotos() -> (root: URL, cleanup: Cleanup, corpus: Corpus) {
        let root = Self.makeTemporaryDirectory()
        let cleanup = Cleanup(root: root)
        cleanup.installSignalHandlers()
        let corpus = Corpus(root: root, sourceDirectory: URL(fileURLWithPath: corpusSource))
        log("generating the photos in \(root.path)")
        do { try corpus.generatePhotoSet() } catch { cleanup.abort("file set: \(error)") }
        return (root, cleanup, corpus)
    }

    /// nginx serving `corpus`'s files, stopped by `cleanup`; the run ends if it cannot start.
    static func startNginx(serving corpus: Corpus, cleanup: Cleanup) -> NginxServer {
        let nginx: NginxServer
        do {
            nginx = try NginxServer.forBenchmarks(serving: corpus.www)
        } catch {
            cleanup.abort("\(error)")
        }
        cleanup.nginx = nginx
        log("nginx \(nginx.baseURL) and \(nginx.http2BaseURL) (h2), prefix \(nginx.prefix.path)")
        return nginx
    }

    /// A section's report (`--only`): `markdown` written to ``output``, `verdicts` printed.
    func writePartialReport(_ markdown: String, verdicts: String) {
        do {
            try markdown.write(toFile: output, atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(output): \(error)")
        }
        print(verdicts)
        log("wrote \(output)")
    }

    /// Every client of every workload, `rounds` times, the order of each workload's clients rotating by one
    /// each round; the samples by "workload/client".
    func runRounds(_ workloads: [Workload]) -> [String: [Sample]] {
        var results: [String: [Sample]] = [:]
        for round in 0..<rounds {
            log("round \(round + 1) of \(rounds)")
            for workload in workloads {
                let clients = workload.clients
                for offset in 0..<clients.count {
                    let client = clients[(offset + round) % clients.count]
                    results["\(workload.name)/\(client.name)", default: []].append(client.run())
                }
            }
        }
        return results
    }

    /// `webimage bulk` against img2dataset on the same job: 2,000 URLs of 2 MP JPEGs from nginx, each
    /// cropped to 256×256 (shorter side to 256, then the centre) and encoded as JPEG at quality 95 into
    /// webdataset tars of 1,000 samples. img2dataset runs one process per core (its multiprocessing
    /// distributor) with 32 threads each; `webimage bulk` runs one process with 64 downloads in flight:
    /// the same number of URLs under way. Both also write their per-row metadata (img2dataset a parquet
    /// file per shard, `webimage bulk` a jsonl) and each image's EXIF (both tools' default). Images are
    /// counted from each tool's `_stats.json` files. The same job then runs on 0.5 MP and 8 MP JPEGs
    /// (``perCoreURLs``), for images per core at three sizes (workloads `dataset-0.5mp`, `dataset-8mp`).
    func runDatasetComparison(
        cli: String, img2dataset: String, corpus: Corpus, lists: ListWriter, root: URL, cleanup: Cleanup,
        rounds: Int, results: inout [String: [Sample]]
    ) {
        do { try corpus.generatePerCoreSets() } catch { cleanup.abort("per-core file set: \(error)") }
        var jobs: [(workload: String, list: String)] = []
        let photos = corpus.photoPaths("jpg")
        jobs.append(
            (
                "dataset",
                lists.write("dataset", paths: (0..<Self.datasetURLs).map { "\(photos[$0 % photos.count])?n=\($0)" })
            ))
        for (label, _) in Corpus.perCoreSizes {
            let paths = corpus.scaledPaths(label)
            let count = Self.perCoreURLs[label] ?? 500
            jobs.append(
                (
                    "dataset-\(label)",
                    lists.write("dataset-\(label)", paths: (0..<count).map { "\(paths[$0 % paths.count])?n=\($0)" })
                ))
        }
        setenv("NO_ALBUMENTATIONS_UPDATE", "1", 1)  // img2dataset's albumentations asks PyPI for updates
        for job in jobs {
            let clients = Self.datasetClients(cli: cli, img2dataset: img2dataset, list: job.list)
            Self.runToolRounds(clients, rounds: rounds, label: job.workload, root: root, cleanup: cleanup) {
                client, outcome, images in
                results["\(job.workload)/\(client)", default: []].append(
                    Sample(wall: outcome.wall, cpu: outcome.cpu, maxRSSKiB: outcome.maxRSSKiB, items: images, bytes: 0))
            }
        }
    }

    /// A command-line tool of a side-by-side run: its name, and its arguments for an output folder.
    typealias ToolClient = (name: String, arguments: (String) -> [String])

    /// Runs each of `clients` once a round, `rounds` times, the order rotating by one each round, each into
    /// a fresh `root/{label}-out` (removed after) with its standard error in `$OUTPUT_LOG`; a run that fails
    /// or saves no image ends the benchmark. `before` is told of each run before it starts, `record` after,
    /// with the images its `_stats.json` files count.
    static func runToolRounds(
        _ clients: [ToolClient], rounds: Int, label: String, root: URL, cleanup: Cleanup,
        before: (String) -> Void = { _ in }, record: (String, ChildOutcome, Int) -> Void
    ) {
        for round in 0..<rounds {
            for offset in 0..<clients.count {
                let client = clients[(offset + round) % clients.count]
                log("\(label), round \(round + 1) of \(rounds): \(client.name)")
                let output = root.appendingPathComponent("\(label)-out")
                let errors = root.appendingPathComponent("\(label)-stderr.txt")
                setenv("OUTPUT_LOG", errors.path, 1)
                before(client.name)
                let outcome = runChild(client.arguments(output.path))
                let images = successes(in: output)
                if outcome.status != 0 || images == 0 {
                    let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
                    cleanup.abort("\(client.name) failed (status \(outcome.status)): \(text.suffix(2000))")
                }
                record(client.name, outcome, images)
                try? FileManager.default.removeItem(at: output)
            }
        }
    }

    /// URLs of the per-core jobs: fewer of the 8 MP photos, whose decodes take four times as long.
    static let perCoreURLs = ["0.5mp": 2_000, "8mp": 500]

    /// The two clients of the dataset comparison over `list`.
    static func datasetClients(cli: String, img2dataset: String, list: String) -> [ToolClient] {
        let processes = String(ProcessInfo.processInfo.activeProcessorCount)
        return [
            (
                "webimage bulk",
                { output in
                    [
                        cli, "bulk", list, "--allow-destination", "127.0.0.0/8", "--output", output, "--resize-mode",
                        "fill", "--size", "256", "--encode",
                        "jpeg", "--quality", "95", "--shard-size", "1000", "--concurrency", "64", "--per-host", "64",
                    ]
                }
            ),
            (
                "img2dataset",
                { output in
                    [
                        "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$OUTPUT_LOG\"", img2dataset, "--url_list", list,
                        "--input_format", "txt", "--output_folder", output, "--output_format", "webdataset",
                        "--resize_mode", "center_crop", "--image_size", "256", "--encode_quality", "95",
                        "--number_sample_per_shard", "1000", "--processes_count", processes, "--thread_count", "32",
                        "--distributor", "multiprocessing", "--enable_wandb", "False", "--timeout", "30",
                    ]
                }
            ),
        ]
    }

    /// The sum of `successes` over the `*_stats.json` files in `folder` (both tools write them).
    static func successes(in folder: URL) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix("_stats.json") }.reduce(0) { total, name in
            let data = try? Data(contentsOf: folder.appendingPathComponent(name))
            let object = data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
            return total + (object?["successes"] as? Int ?? 0)
        }
    }

    private func makeWorkloads(corpus: Corpus, lists: ListWriter, nginx: NginxServer) -> [Workload] {
        let parallel = String(Self.parallel)
        func transferClients(_ name: String, paths: [String], size: Int, withFloor: Bool = false) -> Workload {
            let list = lists.write(name, paths: paths)
            let curlConfig = lists.writeCurlConfig(name, paths: paths)
            return Workload(
                name: name,
                clients: [
                    Client(name: "WebImage") { runClient(["webimage", "--urls", list, "--parallel", parallel]) },
                    Client(name: "WebImage transport alone") {
                        runClient(["transport", "--urls", list, "--parallel", parallel])
                    },
                    Client(name: "libcurl multi") { runClient(["libcurl", "--urls", list, "--parallel", parallel]) },
                    Client(name: "libcurl multi, stores bodies") {
                        runClient(["libcurl", "--urls", list, "--parallel", parallel, "--store"])
                    },
                    Client(name: "curl --parallel") {
                        let outcome = runChild([
                            "curl", "--parallel", "--parallel-max", parallel, "--silent", "--no-progress-meter",
                            "--show-error", "--fail",
                            "--config", curlConfig,
                        ])
                        guard outcome.status == 0 else { fail("curl --parallel failed with status \(outcome.status)") }
                        return Sample(
                            wall: outcome.wall, cpu: outcome.cpu, maxRSSKiB: outcome.maxRSSKiB, items: paths.count,
                            bytes: paths.count * size)
                    },
                    Client(name: "URLSession") { runClient(["urlsession", "--urls", list, "--parallel", parallel]) },
                ]
                    + (withFloor
                        ? [
                            Client(name: Self.floorBare) {
                                runClient(["floor-download", "--bare", "--urls", list, "--parallel", parallel])
                            },
                            Client(name: Self.floorFull) {
                                runClient(["floor-download", "--urls", list, "--parallel", parallel])
                            },
                        ] : []))
        }

        let items = String(Self.floorItems)
        var workloads = [
            http2Workload(paths: corpus.smallPaths(), size: Corpus.smallSize, nginx: nginx, directory: lists.directory),
            transferClients("small", paths: corpus.smallPaths(), size: Corpus.smallSize, withFloor: true),
            transferClients("large", paths: corpus.largePaths(), size: Corpus.largeSize),
            Workload(
                name: "floor",
                clients: [
                    Client(name: "operation per file") {
                        runClient(["floor-operation", "--items", items, "--parallel", parallel])
                    },
                    Client(name: "four notifications per file") {
                        runClient(["floor-notifications", "--items", items])
                    },
                ]),
        ]

        // 2 MP photos: each of the 8 images in 3 formats, 3 times under distinct URLs (a query string).
        var photoURLs: [String] = []
        var photoFiles: [String] = []
        for copy in 0..<3 {
            for ext in Corpus.photoFormats {
                for path in corpus.photoPaths(ext) {
                    photoURLs.append("\(path)?copy=\(copy)")
                    photoFiles.append(corpus.url(path).path)
                }
            }
        }
        let photoList = lists.write("photos", paths: photoURLs)
        let photoFileList = lists.writeFiles("photo-files", paths: photoFiles)
        workloads.append(
            Workload(
                name: "photos",
                clients: [
                    Client(name: "WebImage download+decode") {
                        runClient(["webimage", "--urls", photoList, "--parallel", parallel, "--decode"])
                    },
                    Client(name: "decode only, 2 threads") {
                        runClient(["decode-only", "--files", photoFileList, "--threads", "2"])
                    },
                ]))

        workloads += decoderWorkloads(corpus: corpus, lists: lists)

        // The thumbnail pipeline (issue 14): the 2 MP JPEGs → 256×256 fill → JPEG q85, one thread each.
        let jpegs = corpus.photoPaths("jpg").map { corpus.url($0).path }
        let thumbnailFiles = lists.writeFiles("thumbnail", paths: jpegs)
        // Inside the run's directory, so that the cleanup removes vipsthumbnail's output with the rest.
        let thumbnailOutput = lists.directory.deletingLastPathComponent().appendingPathComponent("thumbnails").path
        do { try FileManager.default.createDirectory(atPath: thumbnailOutput, withIntermediateDirectories: true) } catch
        {
            fail("cannot create \(thumbnailOutput): \(error)")
        }
        let passes = Self.decoderPasses
        var thumbnailClients = [
            Client(name: "WebImage") {
                runClient(["thumbnail", "--files", thumbnailFiles, "--passes", String(passes)])
            },
            Client(name: "vipsthumbnail") {
                runExternalThumbnailClient(
                    paths: jpegs, passes: passes, command: vipsthumbnailCommand(output: thumbnailOutput))
            },
        ]
        if let python = Self.benchPython {
            thumbnailClients.append(
                Client(name: "Pillow") {
                    runExternalThumbnailClient(paths: jpegs, passes: passes, command: pillowCommand(python: python))
                })
        }
        workloads.append(Workload(name: "thumbnail", clients: thumbnailClients))

        let coalescing = lists.write(
            "coalescing", paths: Array(corpus.smallPaths().prefix(Self.coalescingURLs)).map { "\($0)?merge=1" })
        let requests = String(Self.coalescingRequests)
        workloads.append(
            Workload(
                name: "coalescing",
                clients: [
                    Client(name: "all requests overlapping") {
                        let before = nginx.requestCount() ?? 0
                        var sample = runClient([
                            "coalesce", "--urls", coalescing, "--requests", requests, "--parallel", parallel,
                            "--suspended",
                        ])
                        sample.extra["serverRequests"] = Double((nginx.requestCount() ?? 0) - before - 1)
                        return sample
                    },
                    Client(name: "requests made while downloading") {
                        let before = nginx.requestCount() ?? 0
                        var sample = runClient([
                            "coalesce", "--urls", coalescing, "--requests", requests, "--parallel", parallel,
                        ])
                        sample.extra["serverRequests"] = Double((nginx.requestCount() ?? 0) - before - 1)
                        return sample
                    },
                ]))

        let smallPaths = corpus.smallPaths()
        let queued = lists.write(
            "queued",
            paths: (0..<Self.queuedDownloads).map { "\(smallPaths[$0 % smallPaths.count])?queued=\($0)" })
        let bigURL = nginx.baseURL + corpus.bigPath
        let bigFile = corpus.url(corpus.bigPath).path
        workloads.append(
            Workload(
                name: "memory",
                clients: [
                    Client(name: "10,000 queued downloads") {
                        runClient(["queued", "--urls", queued, "--parallel", parallel])
                    },
                    Client(name: "54 MP JPEG, download + scale-down") { runClient(["bigjpeg", "--url", bigURL]) },
                    Client(name: "54 MP JPEG, decode file + scale-down") { runClient(["bigjpeg", "--file", bigFile]) },
                ]))
        return workloads
    }

    /// 2,000 small files over HTTPS with HTTP/2 (issue 17): WebImage, `curl --parallel` (which
    /// multiplexes by default) and URLSession, all verifying nginx's self-signed certificate as a CA
    /// (URLSession through ``trustingLauncher(_:directory:)``). Each
    /// sample also records the connections the run used, from nginx's `$connection` access log.
    private func http2Workload(paths: [String], size: Int, nginx: NginxServer, directory: URL) -> Workload {
        let lists = ListWriter(directory: directory, baseURL: nginx.http2BaseURL)
        let list = lists.write("small-h2", paths: paths)
        let curlConfig = lists.writeCurlConfig("small-h2", paths: paths)
        let ca = nginx.certificateURL.path
        let parallel = String(Self.parallel)
        func counted(_ body: () -> Sample) -> Sample {
            let mark = nginx.accessLogMark()
            var sample = body()
            sample.extra["connections"] = Double(nginx.connections(on: .http2, since: mark, expecting: paths.count))
            return sample
        }
        return Workload(
            name: "small-h2",
            clients: [
                Client(name: "WebImage") {
                    counted { runClient(["webimage", "--urls", list, "--parallel", parallel, "--ca", ca]) }
                },
                Client(name: "curl --parallel") {
                    counted {
                        let outcome = runChild([
                            "curl", "--parallel", "--parallel-max", parallel, "--silent", "--no-progress-meter",
                            "--show-error", "--fail", "--http2", "--cacert", ca, "--config", curlConfig,
                        ])
                        guard outcome.status == 0 else {
                            fail("curl --parallel (h2) failed with status \(outcome.status)")
                        }
                        return Sample(
                            wall: outcome.wall, cpu: outcome.cpu, maxRSSKiB: outcome.maxRSSKiB, items: paths.count,
                            bytes: paths.count * size)
                    }
                },
                Client(name: "URLSession") {
                    counted {
                        runClient(
                            ["urlsession", "--urls", list, "--parallel", parallel],
                            launcher: Self.trustingLauncher(ca, directory: directory))
                    }
                },
            ])
    }

    /// FoundationNetworking has no way to trust an extra CA in a release toolchain (it reads
    /// `URLSessionCertificateAuthorityInfoFile` only in debug builds of Foundation, and has no server-trust
    /// challenge on Linux), and Debian's libcurl always loads /etc/ssl/certs/ca-certificates.crt. So the
    /// URLSession client runs in a private mount namespace where that path is bind-mounted to the system
    /// bundle plus nginx's certificate: the machine's own trust store is never changed. `unshare` and
    /// `sh` exec into the client, which measures itself.
    private static func trustingLauncher(_ ca: String, directory: URL) -> [String] {
        let system = "/etc/ssl/certs/ca-certificates.crt"
        let bundle = directory.appendingPathComponent("ca-bundle-with-nginx.pem")
        let combined =
            ((try? Data(contentsOf: URL(fileURLWithPath: system))) ?? Data()) + "\n".utf8
            + ((try? Data(contentsOf: URL(fileURLWithPath: ca))) ?? Data())
        do { try combined.write(to: bundle) } catch { fail("cannot write \(bundle.path): \(error)") }
        let namespace = geteuid() == 0 ? ["unshare", "--mount"] : ["unshare", "--user", "--map-root-user", "--mount"]
        return namespace + ["sh", "-c", "mount --bind \"$0\" \(system) && exec \"$@\"", bundle.path]
    }

    static func makeTemporaryDirectory() -> URL {
        var template = Array("/tmp/webimage-bench-XXXXXX".utf8CString)
        guard let path = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fail("mkdtemp failed")
        }
        // nginx's worker may run as another user (nobody / www-data): let it read the file set.
        chmod(path, 0o755)
        return URL(fileURLWithPath: String(cString: path))
    }
}

/// Writes URL lists (one per line, for the Swift clients) and curl config files.
struct ListWriter {
    let directory: URL
    let baseURL: String

    func write(_ name: String, paths: [String]) -> String {
        writeFiles(name, paths: paths.map { baseURL + $0 })
    }

    func writeFiles(_ name: String, paths: [String]) -> String {
        save(name + ".txt", paths.joined(separator: "\n") + "\n")
    }

    func writeCurlConfig(_ name: String, paths: [String]) -> String {
        save(name + ".curl", paths.map { "url = \"\(baseURL)\($0)\"\noutput = \"/dev/null\"\n" }.joined())
    }

    private func save(_ file: String, _ text: String) -> String {
        let url = directory.appendingPathComponent(file)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(url.path): \(error)")
        }
        return url.path
    }
}

/// Stops nginx and removes the temporary directory: at the end, on a fatal error, and on SIGINT/SIGTERM.
final class Cleanup: @unchecked Sendable {
    // @unchecked Sendable: `nginx` is set once on the driver thread before any signal can be handled;
    // `finish` runs at most once (the signal source cancels itself by exiting); the serve workload's process
    // groups are behind their own lock.
    let root: URL
    var nginx: NginxServer?
    private var sources: [any DispatchSourceSignal] = []
    /// Process groups of the serve workload's services while they run: they are not in the terminal's
    /// process group, so a Ctrl-C does not reach them.
    private let serviceGroups = Mutex<Set<pid_t>>([])

    func track(_ service: ServiceProcess) { serviceGroups.withLock { _ = $0.insert(service.pid) } }
    func untrack(_ service: ServiceProcess) { serviceGroups.withLock { _ = $0.remove(service.pid) } }

    init(root: URL) { self.root = root }

    func installSignalHandlers() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                finish()
                exit(130)
            }
            source.resume()
            sources.append(source)
        }
    }

    func finish() {
        for group in serviceGroups.withLock({ $0 }) { kill(-group, SIGKILL) }
        nginx?.stop()
        nginx = nil
        try? FileManager.default.removeItem(at: root)
    }

    func abort(_ message: String) -> Never {
        finish()
        fail(message)
    }
}

func log(_ message: String) {
    FileHandle.standardError.write(Data("[bench] \(message)\n".utf8))
}
