import Foundation

/// What callgrind saw for one client: instructions per file (the difference between a long and a short
/// run, so process start-up cancels out) and the top functions of the long run.
struct Profile {
    var client: String
    var instructionsPerFile: Double
    var topSelf: String
    var topInclusive: String
}

/// Runs the small-file clients under `valgrind --tool=callgrind`, which counts instructions repeatably.
struct Profiler {
    let lists: ListWriter
    let corpus: Corpus
    static let shortRun = 200
    static let longRun = 1200

    func run() -> [Profile] {
        guard runChild(["sh", "-c", "command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null"])
            .status == 0
        else {
            log("valgrind not installed: no profile section")
            return []
        }
        let paths = corpus.smallPaths()
        let short = lists.write("profile-short", paths: Array(paths.prefix(Self.shortRun)))
        let long = lists.write("profile-long", paths: Array(paths.prefix(Self.longRun)))
        var profiles: [Profile] = []
        for client in ["webimage", "libcurl"] {
            guard let shortFile = callgrind(client, list: short, tag: "short"),
                let longFile = callgrind(client, list: long, tag: "long"),
                let shortTotal = totalInstructions(shortFile), let longTotal = totalInstructions(longFile)
            else { continue }
            let perFile = Double(longTotal - shortTotal) / Double(Self.longRun - Self.shortRun)
            profiles.append(
                Profile(
                    client: client == "webimage" ? "WebImage" : "libcurl multi", instructionsPerFile: perFile,
                    topSelf: annotate(longFile, inclusive: false, lines: 30),
                    topInclusive: client == "webimage" ? annotate(longFile, inclusive: true, lines: 45) : ""))
        }
        return profiles
    }

    private func callgrind(_ client: String, list: String, tag: String) -> String? {
        let out = lists.directory.appendingPathComponent("callgrind.\(client).\(tag).out").path
        let outcome = runChild([
            "valgrind", "--tool=callgrind", "--quiet", "--callgrind-out-file=\(out)", selfPath(), client,
            "--urls", list, "--parallel", String(Driver.parallel),
        ])
        guard outcome.status == 0 else {
            log("callgrind run of \(client) failed (status \(outcome.status))")
            return nil
        }
        return out
    }

    private func totalInstructions(_ file: String) -> Int? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n").reversed() where line.hasPrefix("totals:") || line.hasPrefix("summary:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
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
