import Foundation
import WebImage

#if canImport(Glibc)
    import Glibc
#endif

/// One row of the serve workload: one service at one concurrency, one `wrk` run.
struct ServeRow: Codable, Sendable {
    var service: String
    var concurrency: Int
    var round = 0
    /// Why the row was not measured (empty when it was).
    var note = ""
    /// Seconds wrk ran.
    var seconds = 0.0
    /// Responses wrk received, any status.
    var responses = 0
    /// Responses with a status of 400 or more.
    var httpErrors = 0
    /// Connect, read and write errors and timeouts.
    var socketErrors = 0
    var p50Milliseconds = 0.0
    var p95Milliseconds = 0.0
    var p99Milliseconds = 0.0
    /// The output format asked for (imgproxy's workload; empty in the 256×256 JPEG one).
    var format = ""
    /// The service's processes' peak resident memory so far (the sum of their VmHWM), in MiB.
    var peakRSSMegabytes = 0.0
    /// User + system seconds of the service's processes over the run.
    var cpuSeconds = 0.0
    /// Requests the origin nginx served during the run.
    var originRequests = 0

    var measured: Bool { note.isEmpty }
    var successes: Int { responses - httpErrors }
    var requestsPerSecond: Double { seconds > 0 ? Double(successes) / seconds : 0 }
    var coresUsed: Double { seconds > 0 ? cpuSeconds / seconds : 0 }
    var cpuMillisecondsPerImage: Double { successes > 0 ? cpuSeconds / Double(successes) * 1000 : 0 }
    var originFetchesPerImage: Double { successes > 0 ? Double(originRequests) / Double(successes) : 0 }
}

/// The serve workload (issue 27): the 2 MP JPEGs on the origin nginx → 256×256 fill → JPEG q85, through
/// `webimage serve`, thumbor and nginx's `image_filter`, each alone on 127.0.0.1, loaded by `wrk` at each
/// concurrency. Every request names a source URL never asked before (a distinct query string, which the
/// origin ignores), so no row but the warm-cache one can be answered from any cache; the origin's request
/// count during each run shows it. The warm-cache row asks the same ``warmURLs`` URLs over and over after
/// one pass over them has filled `webimage serve --cache-dir`.
struct ServeBenchmark {
    /// How many rounds, how long each run lasts, and at which concurrencies.
    struct Settings {
        /// Rounds: in each, every service is started, measured at each concurrency and stopped, in an order
        /// that rotates from round to round (the machine's other load then falls on all of them alike).
        var rounds = 3
        /// Seconds of each measured wrk run. With the defaults the serve workload takes about 4 minutes
        /// (three rounds × four services × two concurrencies × 10 s, plus start-up and the cache fill).
        var seconds = 8
        /// Seconds of the unmeasured wrk run before each measured one, at the same concurrency.
        var warmupSeconds = 2
        var concurrencies = [16, 64]
        /// Another release `webimage` (an earlier commit's, `make bench-serve-compare`), measured as one more
        /// service in the same rounds, so that a change's cost shows against the same machine and moment.
        var baseCLI: String?
        /// What the base row is called after (its commit).
        var baseLabel = "base"
    }

    static let wrkThreads = 2
    /// The distinct URLs of the warm-cache row: 32 per photo.
    static let warmURLs = 256
    static let job = "rs:fill:256:256:0/q:85/f:jpg"

    let settings: Settings
    let root: URL
    let corpus: Corpus
    let origin: NginxServer
    /// The release `webimage` (nil: its rows say so).
    let webimageCLI: String?
    /// thumbor in .venv-bench (nil: its rows say so).
    let thumbor: String?
    /// Stops a running service on SIGINT/SIGTERM.
    let cleanup: Cleanup

    /// A service as the workload drives it.
    struct Service {
        var name: String
        /// The request path for photo `{photo}` under key `{key}`: `prefix + photo + middle + key`.
        var prefix: String
        var middle: String
        /// Starts the service on `port` (nil and a reason when it cannot run here).
        var start: (_ port: Int) -> Result<ServiceProcess, ServiceProcess.StartError>
        /// The warm-cache row: keys cycle over ``warmURLs`` after a pass that asks each once.
        var warm = false
        /// What its answer must be: this format, `side`×`side` (or, with `fits`, at most that with one side
        /// equal to it).
        var answer = Answer(format: .jpeg, side: 256, fits: false)
        /// The output format's name for the rows.
        var format = ""
    }

    struct Answer {
        var format: ImageFormat
        var side: Int
        var fits: Bool
    }

    /// Measures every service, then WebImage's decode-resize-encode alone on the same files, and returns the
    /// report section.
    func run(command: String, loadAtStart: String) -> ServeSection {
        var rows: [ServeRow] = []
        let services = services()
        var unavailable: Set<String> = []
        // The warm services whose cache folder is filled (once: it stays on disk across rounds).
        var filledServices: Set<String> = []
        for round in 0..<settings.rounds {
            for offset in services.indices {
                let service = services[(offset + round) % services.count]
                guard !unavailable.contains(service.name) else { continue }
                log("serve, round \(round + 1) of \(settings.rounds): \(service.name)")
                var filled = filledServices.contains(service.name)
                let measured = measure(service, round: round, filled: &filled)
                if filled { filledServices.insert(service.name) }
                if measured.contains(where: { !$0.measured }) { unavailable.insert(service.name) }
                rows += measured
            }
        }
        return ServeSection(
            rows: rows, pipelineMilliseconds: pipelineMilliseconds(), command: command,
            date: ISO8601DateFormatter().string(from: Date()), load: loadAtStart + " / " + Environment.loadAverage(),
            settings: settings, versions: versions())
    }

    /// CPU ms per image of the thumbnail workload's WebImage client on the same JPEGs (in process, one thread:
    /// shrink-on-load decode, `fill`, JPEG q85, no network and no server), for comparison with the services.
    private func pipelineMilliseconds() -> Double {
        let list = root.appendingPathComponent("serve-pipeline.txt")
        let files = corpus.photoPaths("jpg").map { corpus.url($0).path }
        do { try (files.joined(separator: "\n") + "\n").write(to: list, atomically: true, encoding: .utf8) } catch {
            fail("cannot write \(list.path): \(error)")
        }
        let sample = runClient(["thumbnail", "--files", list.path, "--passes", "5"])
        return sample.cpu / Double(max(sample.items, 1)) * 1000
    }

    /// Starts `service`, checks one answer, fills the disk cache for the warm row (once: it stays on disk
    /// across rounds), measures each concurrency, stops it.
    /// `photos`: how many source images the URLs cycle over (the corpus's photos by default).
    func measure(_ service: Service, round: Int, filled: inout Bool, photos: Int? = nil) -> [ServeRow] {
        let photos = photos ?? corpus.photoNames.count
        func unmeasured(_ note: String) -> [ServeRow] {
            log("serve: \(service.name) not measured: \(note)")
            return settings.concurrencies.map { ServeRow(service: service.name, concurrency: $0, note: note) }
        }
        let port = ServiceProcess.freePort()
        let process: ServiceProcess
        switch service.start(port) {
        case .success(let started): process = started
        case .failure(let error): return unmeasured(error.description)
        }
        cleanup.track(process)
        defer {
            process.stop()
            cleanup.untrack(process)
        }
        let base = "http://127.0.0.1:\(port)"
        if let problem = check(base + service.prefix + "0" + service.middle + "check", answer: service.answer) {
            return unmeasured(problem + " (log: " + ServiceProcess.tail(of: process.log) + ")")
        }
        if service.warm && !filled {
            if let problem = fillCache(service, base: base) { return unmeasured(problem) }
            filled = true
        }
        var rows: [ServeRow] = []
        for concurrency in settings.concurrencies {
            let nonce = service.warm ? "warm" : "r\(round)-c\(concurrency)"
            _ = wrk(
                service, base: base, concurrency: concurrency, seconds: settings.warmupSeconds,
                nonce: nonce + "-warmup", photos: photos)
            // wrk drops the requests still in flight when its time is up; the service finishes them anyway.
            waitUntilIdle(process)
            let before = (cpu: process.cpuSeconds(), origin: origin.requestCount() ?? 0)
            guard
                var row = wrk(
                    service, base: base, concurrency: concurrency, seconds: settings.seconds, nonce: nonce,
                    photos: photos)
            else {
                rows.append(
                    ServeRow(service: service.name, concurrency: concurrency, round: round, note: "wrk failed"))
                continue
            }
            row.round = round
            row.format = service.format
            row.cpuSeconds = process.cpuSeconds() - before.cpu
            row.peakRSSMegabytes = process.peakResidentBytes() / 1_048_576
            // The status request itself is one of nginx's requests.
            row.originRequests = (origin.requestCount() ?? 0) - before.origin - 1
            log(
                "serve: \(service.name) c\(concurrency): \(fmt(row.requestsPerSecond, 1)) req/s, p99 "
                    + "\(fmt(row.p99Milliseconds, 1)) ms, \(fmt(row.cpuMillisecondsPerImage, 2)) ms CPU/image, "
                    + "\(row.httpErrors) HTTP errors, \(row.socketErrors) socket errors")
            rows.append(row)
        }
        return rows
    }

    /// Waits (up to 20 s) until the service's processes use less than 20 ms of CPU in 250 ms.
    private func waitUntilIdle(_ process: ServiceProcess) {
        var last = process.cpuSeconds()
        for _ in 0..<80 {
            usleep(250_000)
            let now = process.cpuSeconds()
            if now - last < 0.02 { return }
            last = now
        }
    }

    /// One request through curl: the answer must be `answer`'s format and size. nil when it is, else what was
    /// wrong.
    func check(_ url: String, answer: Answer) -> String? {
        let file = root.appendingPathComponent("serve-check.out")
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = runChild(["curl", "-s", "-o", file.path, "-w", "%{http_code}", url])
        guard outcome.status == 0, outcome.stdout == "200" else {
            return "GET \(url) answered \(outcome.stdout) (curl status \(outcome.status))"
        }
        guard let data = try? Data(contentsOf: file), ImageFormat.detect(data) == answer.format else {
            return "GET \(url) did not answer \(answer.format.rawValue)"
        }
        guard let frame = try? ImageDecoderRegistry.shared.decode(data).frames.first else {
            return "GET \(url) answered an image that does not decode"
        }
        let fits = max(frame.width, frame.height) == answer.side && min(frame.width, frame.height) <= answer.side
        guard answer.fits ? fits : (frame.width == answer.side && frame.height == answer.side) else {
            return "GET \(url) answered \(frame.width)×\(frame.height), not \(answer.fits ? "within " : "")"
                + "\(answer.side)×\(answer.side)"
        }
        return nil
    }

    /// Asks each warm-cache URL once (curl, 8 at a time), so the measured runs find every result cached.
    private func fillCache(_ service: Service, base: String) -> String? {
        let config = (0..<Self.warmURLs).map { key in
            let path = service.prefix + String(key % corpus.photoNames.count) + service.middle + "warm-\(key)"
            return "url = \"\(base)\(path)\"\noutput = \"/dev/null\"\n"
        }.joined()
        let file = root.appendingPathComponent("serve-warm.curl")
        do { try config.write(to: file, atomically: true, encoding: .utf8) } catch { return "\(error)" }
        let outcome = runChild([
            "curl", "--parallel", "--parallel-max", "8", "--silent", "--show-error", "--fail", "--config", file.path,
        ])
        return outcome.status == 0 ? nil : "filling the cache failed (curl status \(outcome.status))"
    }

    /// One wrk run at `concurrency` for `seconds`; nil when wrk failed or printed no summary.
    private func wrk(
        _ service: Service, base: String, concurrency: Int, seconds: Int, nonce: String, photos: Int
    ) -> ServeRow? {
        let script = root.appendingPathComponent("serve.lua")
        let text = Self.wrkScript(
            prefix: service.prefix, middle: service.middle, photos: photos,
            cycle: service.warm ? Self.warmURLs : 0, nonce: nonce)
        do { try text.write(to: script, atomically: true, encoding: .utf8) } catch { return nil }
        let outcome = runChild([
            "wrk", "-t\(Self.wrkThreads)", "-c\(concurrency)", "-d\(seconds)s", "--timeout", "60s", "--latency",
            "-s", script.path, base,
        ])
        guard outcome.status == 0,
            let line = outcome.stdout.split(separator: "\n").last(where: { $0.hasPrefix("SERVEBENCH ") })
        else {
            log("serve: wrk failed (status \(outcome.status)): \(outcome.stdout.suffix(1000))")
            return nil
        }
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard values.count == 10 else { return nil }
        var row = ServeRow(service: service.name, concurrency: concurrency)
        row.responses = Int(values[0])
        row.seconds = values[1] / 1e6
        row.socketErrors = Int(values[2] + values[3] + values[4] + values[6])
        row.httpErrors = Int(values[5])
        row.p50Milliseconds = values[7] / 1000
        row.p95Milliseconds = values[8] / 1000
        row.p99Milliseconds = values[9] / 1000
        return row
    }

    /// wrk's Lua script. Each request's path is `prefix .. photo .. middle .. key`. With `cycle` 0 the key is
    /// `nonce-thread-counter`, new for every request; otherwise it walks `warm-0 … warm-(cycle−1)`, the two
    /// threads interleaved. `done` prints one `SERVEBENCH` line: responses, duration µs, connect, read,
    /// write, status (≥ 400) and timeout errors, p50, p95 and p99 µs.
    static func wrkScript(prefix: String, middle: String, photos: Int, cycle: Int, nonce: String) -> String {
        """
        local prefix, middle, photos, cycle, nonce = "\(prefix)", "\(middle)", \(photos), \(cycle), "\(nonce)"
        local threads = 0
        function setup(thread)
          thread:set("tid", threads)
          threads = threads + 1
        end
        local counter = 0
        function request()
          counter = counter + 1
          local key, photo
          if cycle > 0 then
            local n = (counter * \(wrkThreads) + tid) % cycle
            key, photo = "warm-" .. n, n % photos
          else
            key, photo = nonce .. "-" .. tid .. "-" .. counter, counter % photos
          end
          return wrk.format("GET", prefix .. photo .. middle .. key)
        end
        function done(summary, latency, requests)
          local e = summary.errors
          io.write(string.format("SERVEBENCH %d %d %d %d %d %d %d %.1f %.1f %.1f\\n", summary.requests,
            summary.duration, e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50),
            latency:percentile(95), latency:percentile(99)))
        end

        """
    }
}

/// `WebImageBench serve-bench`: the serve workload alone (`make bench-serve`). Generates the photos, starts
/// the origin nginx, runs ``ServeBenchmark``, cleans up, and replaces the serve section of `output` (or adds
/// one), leaving the rest of the report as the last `make bench` wrote it.
struct ServeDriver {
    var settings = ServeBenchmark.Settings()
    var output = "docs/BENCHMARKS.md"
    var corpusSource = "Tests/Fixtures/corpus/images"
    var command = "make bench-serve"

    func run() {
        let loadAtStart = Environment.loadAverage()
        let root = Driver.makeTemporaryDirectory()
        let cleanup = Cleanup(root: root)
        cleanup.installSignalHandlers()
        let corpus = Corpus(root: root, sourceDirectory: URL(fileURLWithPath: corpusSource))
        log("generating the photos in \(root.path)")
        do { try corpus.generatePhotoSet() } catch { cleanup.abort("file set: \(error)") }
        let nginx: NginxServer
        do { nginx = try NginxServer.forBenchmarks(serving: corpus.www) } catch { cleanup.abort("\(error)") }
        cleanup.nginx = nginx
        let bench = ServeBenchmark(
            settings: settings, root: root, corpus: corpus, origin: nginx, webimageCLI: Driver.webimageCLI,
            thumbor: Driver.thumbor, cleanup: cleanup)
        let section = bench.run(command: command, loadAtStart: loadAtStart)
        cleanup.finish()
        Self.replaceSection(of: output, with: section.splice(into:))
        for verdict in section.verdicts() {
            let state = verdict.met.map { $0 ? "met   " : "MISSED" } ?? "n/a   "
            print("\(state) \(verdict.target), c\(verdict.concurrency): \(verdict.measured)")
        }
        log("wrote the serve section of \(output)")
    }

    /// Rewrites the report at `output` (a new one when there is none) with `splice` applied: each workload
    /// replaces only its own section.
    static func replaceSection(of output: String, with splice: (String) -> String) {
        let existing = (try? String(contentsOfFile: output, encoding: .utf8)) ?? "# WebImage benchmarks\n"
        do {
            try splice(existing).write(toFile: output, atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(output): \(error)")
        }
    }
}
