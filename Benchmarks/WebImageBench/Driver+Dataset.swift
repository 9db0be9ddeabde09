import Foundation

extension Driver {
    /// `WebImageBench run --only dataset`: the bulk comparison alone (`webimage bulk` against img2dataset on
    /// the 2 MP JPEGs from nginx, `rounds` interleaved rounds) and, unless `--no-profile`, its callgrind
    /// profile; a report of its targets, its table and the stage shares in `output`.
    func runDataset() {
        let loadAtStart = Environment.loadAverage()
        guard let cli = Self.webimageCLI, let img2dataset = Self.img2dataset else {
            fail("--only dataset needs WEBIMAGE_CLI (make bench-build) and .venv-bench's img2dataset (make deps-bench)")
        }
        let (root, cleanup, corpus) = preparePhotos()
        let nginx = Self.startNginx(serving: corpus, cleanup: cleanup)
        let lists = ListWriter(directory: root.appendingPathComponent("lists"), baseURL: nginx.baseURL)
        var results: [String: [Sample]] = [:]
        runDatasetComparison(
            cli: cli, img2dataset: img2dataset, corpus: corpus, lists: lists, root: root, cleanup: cleanup,
            rounds: rounds, results: &results)
        var bulkProfile: BulkProfile?
        if profile {
            log("profiling the bulk job with callgrind")
            bulkProfile = BulkProfiler(lists: lists, corpus: corpus, root: root).run()
        }
        cleanup.finish()
        let report = Report(
            rounds: rounds, command: command, results: results, profiles: [], serve: nil,
            environment: Environment.capture(loadAtStart: loadAtStart), bulkProfile: bulkProfile)
        writePartialReport(report.datasetMarkdown(), verdicts: report.summary(report.datasetVerdicts()))
    }
}
