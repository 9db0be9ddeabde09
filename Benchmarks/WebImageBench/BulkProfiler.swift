import Foundation

/// Where `webimage bulk`'s instructions per image go, from callgrind (issue 26): the dataset workload's
/// job (2 MP JPEGs from nginx → 256² centre crop → JPEG q95 → webdataset) run over a short and a long URL
/// list, the difference divided by the extra images, so start-up and the per-shard work cancel out. The
/// job runs in `WebImageBench bulk-engine` (the same `BulkEngine` and settings as the command): valgrind
/// 3.19 stops with an internal error before the `webimage` executable's `main`.
struct BulkProfile {
    var shortRun: Int
    var longRun: Int
    var instructionsPerImage: Double
    /// Inclusive instructions per image of each stage of ``BulkProfiler/stages``, in that order.
    var stages: [(label: String, perImage: Double)]
}

/// Runs the bulk job under `valgrind --tool=callgrind` (instruction counts repeat under load, unlike time)
/// and attributes each image's instructions to the pipeline's stages.
struct BulkProfiler {
    let lists: ListWriter
    let corpus: Corpus
    let root: URL
    static let shortRun = 40
    static let longRun = 120

    /// The stages, each the inclusive cost of one function (they do not nest in one another), with what it
    /// stands for. Whatever the process spends outside them is the table's last row.
    static let stages: [(symbol: String, label: String)] = [
        ("TransportLoop.run()", "download: the libcurl transport thread (HTTP, receiving the body)"),
        ("JPEGDecoder.decode(_:options:)", "decode: libjpeg-turbo, DCT-scaled to ¼ (408×306)"),
        (
            "BulkImageTransformer.transform(_:budget:)",
            "resize + centre crop: Lanczos-3 to 341×256, the centre 256² (AVX2 kernels)"
        ),
        ("JPEGEncoder.encode(_:)", "encode: libjpeg-turbo JPEG q95 4:4:4, standard Huffman tables"),
        ("BulkHashAlgorithm.hex(_:)", "SHA-256 of the downloaded file (`--compute-hash`'s default)"),
        ("OpenShard.record(_:)", "the sample's record: JSON, tar members, parquet row"),
    ]

    func run() -> BulkProfile? {
        guard
            runChild(["sh", "-c", "command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null"])
                .status == 0
        else { return nil }
        let binary = Profiler.strippedCopy(of: selfPath(), in: lists.directory)
        let photos = corpus.photoPaths("jpg")
        func list(_ count: Int) -> String {
            lists.write("bulk-profile-\(count)", paths: (0..<count).map { "\(photos[$0 % photos.count])?p=\($0)" })
        }
        guard let short = callgrind(binary, list: list(Self.shortRun), tag: "short"),
            let long = callgrind(binary, list: list(Self.longRun), tag: "long"),
            let shortTotal = Profiler.totalInstructions(short), let longTotal = Profiler.totalInstructions(long)
        else { return nil }
        let images = Double(Self.longRun - Self.shortRun)
        let symbols = Self.stages.map(\.symbol)
        let shortCosts = Profiler.inclusiveCosts(short, symbols: symbols)
        let longCosts = Profiler.inclusiveCosts(long, symbols: symbols)
        return BulkProfile(
            shortRun: Self.shortRun, longRun: Self.longRun,
            instructionsPerImage: Double(longTotal - shortTotal) / images,
            stages: Self.stages.map { stage in
                (stage.label, Double((longCosts[stage.symbol] ?? 0) - (shortCosts[stage.symbol] ?? 0)) / images)
            })
    }

    private func callgrind(_ binary: String, list: String, tag: String) -> String? {
        let out = lists.directory.appendingPathComponent("callgrind.bulk.\(tag).out").path
        let output = root.appendingPathComponent("bulk-profile-out").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let outcome = runChild(
            ["valgrind", "--tool=callgrind", "--quiet", "--callgrind-out-file=\(out)"]
                + [binary, "bulk-engine", "--urls", list, "--output", output])
        guard outcome.status == 0 else {
            log("callgrind run of bulk-engine failed (status \(outcome.status))")
            return nil
        }
        return out
    }
}

extension Report {
    /// The bulk profile's table; the milliseconds are each stage's share of the instructions applied to the
    /// CPU time per image `webimage bulk` measured in the dataset workload of the same run.
    func bulkProfileSection() -> String {
        guard let profile = bulkProfile else { return "" }
        var text = "### `webimage bulk`: where each image's CPU goes (callgrind)\n\n"
        text += "The dataset workload's job (2 MP JPEGs from nginx → 256² centre crop → JPEG q95 → webdataset, with "
        text += "its jsonl and parquet; `BulkEngine` with the command's settings, in `WebImageBench bulk-engine`, as "
        text +=
            "valgrind 3.19 cannot start the `webimage` executable) under `valgrind --tool=callgrind`, over \(profile.longRun) "
        text += "and \(profile.shortRun) URLs: instructions per image = the difference of the two runs' totals "
        text += "÷ \(profile.longRun - profile.shortRun), so start-up and the per-shard files cancel out. A stage's "
        text += "instructions are the inclusive cost of the function named, the same difference. "
        let cpu = med("dataset", "webimage bulk") { $0.cpu / Double(max($0.items, 1)) * 1000 }
        if cpu > 0 {
            text += "Its milliseconds are its share of the instructions × the \(fmt(cpu, 2)) ms of CPU per image "
            text += "`webimage bulk` took in the comparison above (instructions do not all cost the same time: "
            text += "an estimate). Valgrind offers no SHA extensions, so BoringSSL's SHA-256 runs its portable "
            text += "code under it: on a processor with them the real run hashes several times faster, and the "
            text += "SHA-256 row overstates its share.\n\n"
        } else {
            text += "(No CPU time per image was measured in this run: the milliseconds column is empty.)\n\n"
        }
        text += "| stage | function (inclusive) | instructions per image | ms per image | share |\n"
        text += "|---|---|---:|---:|---:|\n"
        let total = max(profile.instructionsPerImage, 1)
        func row(_ label: String, _ symbol: String, _ value: Double) -> String {
            let milliseconds = cpu > 0 ? fmt(value / total * cpu, 2) : ""
            return "| \(label) | \(symbol) | \(fmt(value, 0)) | \(milliseconds) | \(fmt(value / total * 100, 1)) % |\n"
        }
        var attributed = 0.0
        for (index, stage) in profile.stages.enumerated() {
            text += row(stage.label, "`\(BulkProfiler.stages[index].symbol)`", stage.perImage)
            attributed += stage.perImage
        }
        text += row("the rest: downloader, tasks, copies, allocation", "—", profile.instructionsPerImage - attributed)
        text += row("**all of it**", "—", profile.instructionsPerImage)
        return text + "\n"
    }
}
