import Foundation

// WebImageBench — the side-by-side benchmark harness (issue 7).
//
//   WebImageBench run [--rounds N] [--output docs/BENCHMARKS.md] [--corpus DIR] [--no-profile]
//       the driver: file set, nginx, interleaved rounds, callgrind profile, report
//   WebImageBench run --only decoders --output FILE [--rounds N] [--corpus DIR]
//       the decoder workloads alone (photos only, no nginx): a report of their targets and table in FILE
//   WebImageBench run --only dataset --output FILE [--rounds N] [--corpus DIR] [--no-profile]
//       `webimage bulk` against img2dataset alone (photos from nginx), with its callgrind stage profile
//   WebImageBench serve-bench [--output docs/BENCHMARKS.md] [--rounds N] [--seconds N] [--warmup N]
//       [--concurrency 16,64] [--base-cli PATH --base-label COMMIT]
//       the serve workload alone (webimage serve, thumbor, nginx image_filter under wrk): replaces the serve
//       section of the output file; `run` includes it unless --no-serve; with --base-cli another webimage
//       (an earlier commit's) runs as one more service in the same rounds (make bench-serve-compare)
//   WebImageBench serve-bench --workload imgproxy [--photos DIR] [--rounds N] [--seconds N] [--concurrency 2,16]
//       imgproxy's benchmark workload (ImgproxyWorkload.swift): webimage serve and thumbor
//   WebImageBench dns-bench [--output docs/BENCHMARKS.md] [--rounds N]
//       `webimage bulk` against img2dataset behind a slow DNS (unbound): as root inside
//       `unshare --net --mount` (make bench-dns); replaces the DNS section of the output file
//   WebImageBench <client> ...
//       one client run, printing one JSON `Sample` line; the driver starts these as child processes:
//       webimage | transport | libcurl | urlsession   --urls FILE --parallel N [--decode] [--store] [--ca PEM]
//       floor-download --urls FILE --parallel N [--bare]
//       coalesce    --urls FILE --requests N --parallel N [--suspended]
//       queued      --urls FILE --parallel N
//       decode-only --files FILE --threads N
//       decoder     --files FILE --impl swift|c --passes N
//       thumbnail   --files FILE --passes N   (WebImage's side of the thumbnail workload)
//       bulk-engine --urls FILE --output DIR   (the dataset workload's bulk job in process, for callgrind)
//       bigjpeg     --url URL | --file PATH
//       floor-operation --items N --parallel N;  floor-notifications --items N

/// `--key value` pairs and bare `--flag`s after the subcommand.
struct Arguments {
    private var values: [String: String] = [:]

    init(_ arguments: [String]) {
        var index = 0
        while index < arguments.count {
            let key = arguments[index]
            guard key.hasPrefix("--") else { fail("unexpected argument \(key)") }
            if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") {
                values[String(key.dropFirst(2))] = arguments[index + 1]
                index += 2
            } else {
                values[String(key.dropFirst(2))] = ""
                index += 1
            }
        }
    }

    func string(_ key: String) -> String? { values[key] }
    func flag(_ key: String) -> Bool { values[key] != nil }

    func required(_ key: String) -> String {
        guard let value = values[key], !value.isEmpty else { fail("missing --\(key)") }
        return value
    }

    func int(_ key: String, default fallback: Int) -> Int {
        guard let text = values[key] else { return fallback }
        guard let value = Int(text), value > 0 else { fail("--\(key) needs a positive number") }
        return value
    }
}

extension Arguments {
    /// `--{prefix}rounds`, `--{prefix}seconds`, `--{prefix}warmup` and `--{prefix}concurrency 16,64`.
    func serveSettings(prefix: String, defaults: ServeBenchmark.Settings = .init()) -> ServeBenchmark.Settings {
        var settings = defaults
        settings.rounds = int(prefix + "rounds", default: settings.rounds)
        settings.seconds = int(prefix + "seconds", default: settings.seconds)
        settings.warmupSeconds = int(prefix + "warmup", default: settings.warmupSeconds)
        if let list = string(prefix + "concurrency") {
            let values = list.split(separator: ",").compactMap { Int($0) }
            guard !values.isEmpty, values.allSatisfy({ $0 > 0 }) else {
                fail("--\(prefix)concurrency takes positive numbers separated by commas")
            }
            settings.concurrencies = values
        }
        return settings
    }
}

let commandLine = Array(CommandLine.arguments.dropFirst())
guard let subcommand = commandLine.first else {
    fail("usage: WebImageBench run [--rounds N] [--output FILE] | WebImageBench <client> ... (see main.swift)")
}
// `--help` anywhere prints the usage instead of starting a run (a run takes many minutes).
if commandLine.contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(
        """
        usage: WebImageBench run [--rounds N] [--output FILE] [--corpus DIR] [--no-profile] [--no-serve] \
        [--only decoders|dataset] [--serve-rounds N] [--serve-seconds N]
               WebImageBench serve-bench [--output FILE] [--rounds N] [--seconds N] [--warmup N] [--concurrency 16,64]
               WebImageBench serve-bench --workload imgproxy [--photos DIR] [--output FILE] [--rounds N] [--seconds N] \
        [--warmup N] [--concurrency 2,16]
               WebImageBench dns-bench [--output FILE] [--rounds N]
               WebImageBench <client> ...   (the clients the driver starts; Benchmarks/WebImageBench/main.swift lists them)
        """)
    exit(0)
}
let arguments = Arguments(Array(commandLine.dropFirst()))

switch subcommand {
case "run":
    var driver = Driver()
    driver.rounds = arguments.int("rounds", default: driver.rounds)
    driver.output = arguments.string("output") ?? driver.output
    driver.corpusSource = arguments.string("corpus") ?? driver.corpusSource
    driver.profile = !arguments.flag("no-profile")
    driver.command = arguments.string("command") ?? driver.command
    driver.serve = arguments.serveSettings(prefix: "serve-")
    driver.runsServe = !arguments.flag("no-serve")
    if let only = arguments.string("only") {
        guard let section = Driver.Section(rawValue: only) else { fail("--only takes: decoders, dataset") }
        // A partial report must not replace the whole one.
        guard let output = arguments.string("output"), !output.hasSuffix("BENCHMARKS.md") else {
            fail("--only writes a partial report: give --output another file than docs/BENCHMARKS.md")
        }
        driver.only = section
        driver.output = output
        driver.command = arguments.string("command") ?? (["WebImageBench"] + commandLine).joined(separator: " ")
    }
    driver.run()
case "serve-bench" where arguments.string("workload") == "imgproxy":
    var driver = ImgproxyDriver()
    driver.settings = arguments.serveSettings(prefix: "", defaults: driver.settings)
    driver.output = arguments.string("output") ?? driver.output
    driver.photos = arguments.string("photos") ?? driver.photos
    driver.command = arguments.string("command") ?? driver.command
    driver.run()
case "serve-bench":
    var driver = ServeDriver()
    driver.settings = arguments.serveSettings(prefix: "")
    driver.settings.baseCLI = arguments.string("base-cli")
    driver.settings.baseLabel = arguments.string("base-label") ?? driver.settings.baseLabel
    driver.output = arguments.string("output") ?? driver.output
    driver.corpusSource = arguments.string("corpus") ?? driver.corpusSource
    driver.command = arguments.string("command") ?? driver.command
    driver.run()
case "dns-bench":
    var driver = DNSDriver()
    driver.rounds = arguments.int("rounds", default: driver.rounds)
    driver.output = arguments.string("output") ?? driver.output
    driver.corpusSource = arguments.string("corpus") ?? driver.corpusSource
    driver.command = arguments.string("command") ?? driver.command
    driver.run()
case "webimage":
    runWebImageClient(
        urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6),
        decode: arguments.flag("decode"), caBundle: arguments.string("ca")
    ).emit()
case "transport":
    runTransportClient(urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6))
        .emit()
case "libcurl":
    runLibcurlClient(
        urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6),
        store: arguments.flag("store")
    ).emit()
case "urlsession":
    runURLSessionClient(
        urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6),
        caBundle: arguments.string("ca")
    ).emit()
case "coalesce":
    runCoalescingClient(
        urls: readLines(arguments.required("urls")), requests: arguments.int("requests", default: 10_000),
        parallel: arguments.int("parallel", default: 6), suspended: arguments.flag("suspended")
    ).emit()
case "queued":
    runQueuedMemoryClient(urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6))
        .emit()
case "decode-only":
    runDecodeOnlyClient(paths: readLines(arguments.required("files")), threads: arguments.int("threads", default: 2))
        .emit()
case "decoder":
    runDecoderClient(
        paths: readLines(arguments.required("files")), implementation: arguments.required("impl"),
        passes: arguments.int("passes", default: 3)
    ).emit()
case "bulk-engine":
    runBulkEngineClient(urls: arguments.required("urls"), output: arguments.required("output")).emit()
case "thumbnail":
    runWebImageThumbnailClient(
        paths: readLines(arguments.required("files")), passes: arguments.int("passes", default: 3)
    ).emit()
case "thumbnail-parts":
    runThumbnailPartsClient(paths: readLines(arguments.required("files")), passes: arguments.int("passes", default: 3))
case "bigjpeg":
    runBigJPEGClient(url: arguments.string("url"), path: arguments.string("file")).emit()
case "floor-operation":
    runOperationFloorClient(
        items: arguments.int("items", default: 2000), parallel: arguments.int("parallel", default: 6)
    )
    .emit()
case "floor-download":
    runDownloadFloorClient(
        urls: readLines(arguments.required("urls")), parallel: arguments.int("parallel", default: 6),
        bare: arguments.flag("bare")
    ).emit()
case "floor-notifications":
    runNotificationFloorClient(items: arguments.int("items", default: 2000)).emit()
default:
    fail("unknown subcommand \(subcommand)")
}
