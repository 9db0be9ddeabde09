import Foundation

extension Driver {
    /// One workload per format of the 2 MP photos (JPEG, WebP, PNG, AVIF, JPEG XL, HEIC): WebImage's decoder
    /// against the C library called directly, one thread each, on the same bytes.
    func decoderWorkloads(corpus: Corpus, lists: ListWriter) -> [Workload] {
        let passes = String(Self.decoderPasses)
        return (Corpus.photoFormats + Corpus.nextGenerationFormats).map { ext in
            let files = lists.writeFiles("decoder-\(ext)", paths: corpus.photoPaths(ext).map { corpus.url($0).path })
            return Workload(
                name: "decoder-\(ext)",
                clients: [
                    Client(name: "WebImage decoder") {
                        runClient(["decoder", "--files", files, "--impl", "swift", "--passes", passes])
                    },
                    Client(name: "C library") {
                        runClient(["decoder", "--files", files, "--impl", "c", "--passes", passes])
                    },
                ])
        }
    }

    /// `run --only decoders`: the decoder workloads alone, in `rounds` interleaved rounds. Only the 2 MP
    /// photos are generated; no nginx, no other workload, no profile. The output file gets the decoder
    /// targets and table only (never point it at docs/BENCHMARKS.md, which `make bench` writes whole).
    func runDecoders() {
        let loadAtStart = Environment.loadAverage()
        let (root, cleanup, corpus) = preparePhotos()
        // File lists only: no URL is written, so the base URL is never used.
        let lists = ListWriter(directory: root.appendingPathComponent("lists"), baseURL: "")
        let results = runRounds(decoderWorkloads(corpus: corpus, lists: lists))
        cleanup.finish()
        let report = Report(
            rounds: rounds, command: command, results: results, profiles: [], serve: nil,
            environment: Environment.capture(loadAtStart: loadAtStart))
        writePartialReport(report.decoderMarkdown(), verdicts: report.summary(report.decoderVerdicts()))
    }
}
