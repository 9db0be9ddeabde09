import Foundation

/// What callgrind saw for one client: instructions per file (the difference between a long and a short
/// run, so process start-up cancels out) and the top functions of the long run.
struct Profile {
    var client: String
    var instructionsPerFile: Double
    var topSelf: String
    var topInclusive: String
    /// Inclusive instructions per file of the functions in `Profiler.breakdown`.
    var breakdown: [(label: String, perFile: Double)] = []
}

/// Runs the small-file clients under `valgrind --tool=callgrind`, which counts instructions repeatably.
struct Profiler {
    let lists: ListWriter
    let corpus: Corpus
    static let shortRun = 200
    static let longRun = 1200

    /// WebImage functions whose inclusive cost per file the report lists, with what they stand for.
    static let breakdown: [(symbol: String, label: String)] = [
        ("TransportLoop.run()", "transport thread, all of it (libcurl + callbacks)"),
        ("curlHeaderCallback", "· header callback"),
        ("ResponseHeadParser.consume(line:)", "· · ResponseHeadParser.consume(line:)"),
        ("StringProtocol.trimmingCharacters(in:)", "· · · Foundation trimmingCharacters(in:)"),
        ("curlWriteCallback", "· write callback"),
        ("ImageDownloaderOperation.transferDidReceiveData(_:totalReceived:)", "· · Operation.transferDidReceiveData"),
        ("CurlTransfer.deliverResponse()", "· · CurlTransfer.deliverResponse() (effective URL, delegate)"),
        ("CurlTransfer.finish(code:cancelled:)", "· CurlTransfer.finish (metrics, completion)"),
        ("ImageDownloader.download(_:options:context:progress:completed:detailed:)", "downloadImage (caller thread)"),
        ("OperationQueue._schedule(_:)", "corelibs OperationQueue._schedule"),
        ("ImageDownloaderOperation.start()", "ImageDownloaderOperation.start()"),
        ("CurlTransfer.init(request:pool:share:delegate:)", "· CurlTransfer.init (pooled easy handle + options)"),
        (
            "ImageDownloaderOperation.process(_:metrics:cacheWrite:)",
            "completion processing (process: serve callers, finish)"
        ),
        ("QueueChannel.drain()", "callback queue: drained blocks (notifications, completions)"),
        ("closure #1 in ImageDownloaderOperation.post(_:)", "· Start / ReceiveResponse notifications (post)"),
    ]

    func run() -> [Profile] {
        guard
            runChild(["sh", "-c", "command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null"])
                .status == 0
        else {
            log("valgrind not installed: no profile section")
            return []
        }
        let binary = strippedCopy()
        let paths = corpus.smallPaths()
        let short = lists.write("profile-short", paths: Array(paths.prefix(Self.shortRun)))
        let long = lists.write("profile-long", paths: Array(paths.prefix(Self.longRun)))
        var profiles: [Profile] = []
        for client in ["webimage", "libcurl"] {
            guard let shortFile = callgrind(binary, client, list: short, tag: "short"),
                let longFile = callgrind(binary, client, list: long, tag: "long"),
                let shortTotal = Self.totalInstructions(shortFile), let longTotal = Self.totalInstructions(longFile)
            else { continue }
            let perFile = Double(longTotal - shortTotal) / Double(Self.longRun - Self.shortRun)
            var profile = Profile(
                client: client == "webimage" ? "WebImage" : "libcurl multi", instructionsPerFile: perFile,
                topSelf: annotate(longFile, inclusive: false, lines: 30),
                topInclusive: client == "webimage" ? annotate(longFile, inclusive: true, lines: 45) : "")
            if client == "webimage" {
                let symbols = Self.breakdown.map(\.symbol)
                let shortCosts = Self.inclusiveCosts(shortFile, symbols: symbols)
                let longCosts = Self.inclusiveCosts(longFile, symbols: symbols)
                profile.breakdown = Self.breakdown.map { entry in
                    let difference = (longCosts[entry.symbol] ?? 0) - (shortCosts[entry.symbol] ?? 0)
                    return (entry.label, Double(difference) / Double(Self.longRun - Self.shortRun))
                }
            }
            profiles.append(profile)
        }
        if let large = callgrind(
            binary, "webimage", list: lists.directory.appendingPathComponent("large.txt").path,
            tag: "large"), let total = Self.totalInstructions(large)
        {
            profiles.append(
                Profile(
                    client: "WebImage, 20 × 5 MiB", instructionsPerFile: Double(total) / Double(Corpus.largeCount),
                    topSelf: annotate(large, inclusive: false, lines: 12),
                    topInclusive: annotate(large, inclusive: true, lines: 30)))
        }
        return profiles
    }

    /// valgrind 3.19 cannot read the DWARF 5 Swift 6 emits ("unhandled dwarf2 abbrev form code 0x25"),
    /// so callgrind runs a copy without debug sections; the symbol table keeps function names.
    private func strippedCopy() -> String {
        Self.strippedCopy(of: selfPath(), in: lists.directory)
    }

    /// A copy of `binary` in `directory` without its debug sections (the binary itself when objcopy fails).
    static func strippedCopy(of binary: String, in directory: URL) -> String {
        let copy = directory.appendingPathComponent(URL(fileURLWithPath: binary).lastPathComponent + "-nodebug").path
        let outcome = runChild(["objcopy", "--strip-debug", binary, copy])
        return outcome.status == 0 ? copy : binary
    }

    private func callgrind(_ binary: String, _ client: String, list: String, tag: String) -> String? {
        let out = lists.directory.appendingPathComponent("callgrind.\(client).\(tag).out").path
        let outcome = runChild([
            "valgrind", "--tool=callgrind", "--quiet", "--callgrind-out-file=\(out)", binary, client,
            "--urls", list, "--parallel", String(Driver.parallel),
        ])
        guard outcome.status == 0 else {
            log("callgrind run of \(client) failed (status \(outcome.status))")
            return nil
        }
        return out
    }

    static func totalInstructions(_ file: String) -> Int? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n").reversed() where line.hasPrefix("totals:") || line.hasPrefix("summary:")
        {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// Inclusive Ir of each of `symbols` (the first demangled function name containing it).
    static func inclusiveCosts(_ file: String, symbols: [String]) -> [String: Int] {
        let script =
            "callgrind_annotate --inclusive=yes --threshold=100 '\(file)' | (swift demangle --simplified 2>/dev/null || cat)"
        var costs: [String: Int] = [:]
        for line in runChild(["sh", "-c", script]).stdout.split(separator: "\n") {
            guard let open = line.firstIndex(of: "("), let colon = line.range(of: "???:") ?? line.range(of: ":") else {
                continue
            }
            guard
                let value = Int(
                    line[..<open].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: ""))
            else { continue }
            let function = line[colon.upperBound...]
            for symbol in symbols where costs[symbol] == nil {
                // Skip protocol witnesses and partial applies: they wrap the function (same cost or more).
                // The @objc entry of a C callback is kept: the closure itself is often inlined into it.
                if function.contains(symbol) && !function.hasPrefix("protocol witness")
                    && !function.hasPrefix("partial apply")
                {
                    costs[symbol] = value
                }
            }
        }
        return costs
    }

    /// callgrind_annotate's function table (self or inclusive Ir), Swift symbols demangled.
    private func annotate(_ file: String, inclusive: Bool, lines: Int) -> String {
        let script = """
            callgrind_annotate --inclusive=\(inclusive ? "yes" : "no") --threshold=100 '\(file)' \
            | grep -E '^ *[0-9,]+ \\(' | head -n \(lines) \
            | (swift demangle --simplified 2>/dev/null || cat) | cut -c1-200
            """
        return runChild(["sh", "-c", script]).stdout
    }
}
