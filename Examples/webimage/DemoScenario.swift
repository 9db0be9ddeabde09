import Foundation
import LocalImageServer
import WebImage

/// One request of a demo scenario.
struct DemoRequest {
    var path: String
    var options: ImageDownloaderOptions = []
    var context: ImageDownloadContext?
    var note: String = ""
    /// Whether the download is meant to succeed (the error scenarios are meant to fail); nil when either
    /// is fine (a truncated file may decode to a partial image or fail with badImageData).
    var succeeds: Bool? = true
}

/// One step of `webimage demo`: a downloader configuration, requests, and what to point out afterwards.
struct DemoScenario {
    var title: String
    var explanation: String
    var config = ImageDownloaderConfig.default
    var requests: [DemoRequest]
    /// Queue everything while the downloader is suspended, so the start order is the queue's choice alone.
    var queueSuspended = false
    let server: LocalImageServer
    /// Lines describing what the server saw; may refine the notes of the outcomes.
    var observe: (LocalImageServer, inout [DownloadOutcome]) -> [String] = { _, _ in [] }

    /// Runs the requests through a fresh downloader with `config`; notes default to the requests'.
    func run(display: ProgressDisplay) async -> [DownloadOutcome] {
        let downloader = ImageDownloader(config: config)
        let batch = requests.map {
            BatchDownload.Request(url: server.url($0.path), options: $0.options, context: $0.context)
        }
        if queueSuspended { downloader.isSuspended = true }
        var outcomes = await BatchDownload(downloader: downloader).run(batch, display: display) {
            downloader.isSuspended = false
        }
        for index in outcomes.indices where outcomes[index].note.isEmpty {
            outcomes[index].note = requests[index].note
        }
        // Awaited, not waited for: no thread is held while the transport closes its connections.
        downloader.cancelAllDownloads()
        await downloader.invalidate()
        return outcomes
    }

    /// The tour, in order.
    static func all(server: LocalImageServer) -> [DemoScenario] {
        [merge(server), lifo(server), progressive(server), scaleDown(server), animations(server)]
            + httpCache(server) + [errors(server)]
    }

    private static func merge(_ server: LocalImageServer) -> DemoScenario {
        let path = "/drip/astronaut-baseline.jpg"
        let query = "?chunk=16384&interval=20"
        var scenario = DemoScenario(
            title: "merge", explanation: "three callers ask for one URL at once",
            requests: (1...3).map { DemoRequest(path: path + query, note: "caller \($0)/3") }, server: server)
        scenario.observe = { server, outcomes in
            let transfers = server.count(for: path)
            for index in outcomes.indices { outcomes[index].note += transfers == 1 ? " merged" : "" }
            return ["3 callers, \(transfers) transfer\(transfers == 1 ? "" : "s") (one operation per URL)"]
        }
        return scenario
    }

    private static func lifo(_ server: LocalImageServer) -> DemoScenario {
        let names = [
            "camera-gray.jpg", "chelsea-palette.png", "horse-palette-trns.png", "horse-lossless.webp",
            "chelsea-exif-orientation6.jpg",
        ]
        var scenario = DemoScenario(
            title: "lifo", explanation: "one slot, executionOrder = .lifo: the newest request starts first",
            requests: names.map { DemoRequest(path: "/files/\($0)") }, queueSuspended: true, server: server)
        scenario.config.maxConcurrentDownloads = 1
        scenario.config.executionOrder = .lifo
        scenario.observe = { server, outcomes in
            let paths = names.map { "/files/\($0)" }
            let order = server.requests.filter { paths.contains($0.path) }.compactMap { entry in
                paths.firstIndex(of: entry.path)
            }
            for (position, index) in order.enumerated() where index < outcomes.count {
                outcomes[index].note = "q\(index + 1) started \(position + 1)"
            }
            return ["queued 1…5, the server saw them as " + order.map { String($0 + 1) }.joined(separator: ", ")]
        }
        return scenario
    }

    private static func progressive(_ server: LocalImageServer) -> DemoScenario {
        var scenario = DemoScenario(
            title: "progressive", explanation: ".progressiveLoad decodes partial images while the bytes drip in",
            requests: [
                DemoRequest(path: "/drip/coffee-progressive.jpg?chunk=4096&interval=15", options: .progressiveLoad),
                DemoRequest(path: "/drip/horse-rgba.png?chunk=1024&interval=15", options: .progressiveLoad),
            ], server: server)
        scenario.observe = { _, outcomes in
            for index in outcomes.indices { outcomes[index].note = "\(outcomes[index].partialImages) partials" }
            return outcomes.map {
                "\($0.url.lastPathComponent): \($0.partialImages) partial images before the final one"
            }
        }
        return scenario
    }

    private static func scaleDown(_ server: LocalImageServer) -> DemoScenario {
        var scenario = DemoScenario(
            title: "scale-down",
            explanation: ".scaleDownLargeImages with a 300 KB pixel budget (the default is 60 MB); a 96x96 thumbnail",
            requests: [
                DemoRequest(path: "/files/astronaut-lossy.webp", options: .scaleDownLargeImages, note: "scaled"),
                DemoRequest(path: "/files/rocket-cmyk.jpg", options: .scaleDownLargeImages, note: "scaled"),
                DemoRequest(
                    path: "/files/coffee-progressive.jpg",
                    context: ImageDownloadContext(thumbnailPixelSize: PixelSize(width: 96, height: 96)),
                    note: "thumbnail"),
            ], server: server)
        scenario.config.scaleDownLimitBytes = 300 * 1024
        scenario.observe = { _, outcomes in
            outcomes.compactMap { outcome in
                outcome.image.map {
                    "\(outcome.url.lastPathComponent): \($0.originalWidth)x\($0.originalHeight) → \($0.width)x\($0.height)"
                }
            }
        }
        return scenario
    }

    private static func animations(_ server: LocalImageServer) -> DemoScenario {
        var scenario = DemoScenario(
            title: "animations", explanation: "animated GIF and WebP; .decodeFirstFrameOnly on one",
            requests: [
                DemoRequest(path: "/files/chelsea-animated.gif", note: "all frames"),
                DemoRequest(path: "/files/chelsea-animated.webp", options: .decodeFirstFrameOnly, note: "first only"),
            ], server: server)
        scenario.observe = { _, outcomes in
            outcomes.compactMap { outcome in
                outcome.image.map {
                    "\(outcome.url.lastPathComponent): \($0.frames.count) of \($0.frameCount) frames decoded"
                }
            }
        }
        return scenario
    }

    /// Two passes over the same URLs through one memory-only cache (the user's disk cache is left alone):
    /// `no-cache` revalidates with a 304, `max-age=60` is served fresh without a request.
    private static func httpCache(_ server: LocalImageServer) -> [DemoScenario] {
        let cache = HTTPCache(directory: nil)
        let paths = ["/cache/no-cache/horse-lossless.webp", "/cache/max-age%3D60/horse-palette-trns.png"]
        func pass(_ number: Int) -> DemoScenario {
            var scenario = DemoScenario(
                title: "http cache, pass \(number)",
                explanation: number == 1
                    ? ".useURLCache stores the responses (no-cache and max-age=60)"
                    : "the same URLs again: no-cache revalidates (304), max-age=60 is fresh (no request)",
                requests: paths.map { DemoRequest(path: $0, options: .useURLCache, note: "pass \(number)") },
                server: server)
            scenario.config.urlCache = cache
            scenario.observe = { server, outcomes in
                for index in outcomes.indices {
                    outcomes[index].note = "pass \(number) \(outcomes[index].cacheStatus?.rawValue ?? "")"
                }
                return paths.map { path in
                    let statuses = server.requests(for: path).map { $0.status.map(String.init) ?? "-" }
                    return "\(path): server answered \(statuses.joined(separator: ", ")) so far"
                }
            }
            return scenario
        }
        return [pass(1), pass(2)]
    }

    private static func errors(_ server: LocalImageServer) -> DemoScenario {
        var scenario = DemoScenario(
            title: "errors", explanation: "a truncated file, an HTML page named .jpg, a 404",
            requests: [
                DemoRequest(path: "/files/truncated.webp", note: "truncated", succeeds: nil),
                DemoRequest(path: "/files/html-error-page.jpg", note: "html", succeeds: false),
                DemoRequest(path: "/status/404", note: "404", succeeds: false),
            ], server: server)
        scenario.observe = { _, outcomes in
            var lines: [String] = []
            for index in outcomes.indices {
                let name = outcomes[index].url.lastPathComponent
                if let error = outcomes[index].error {
                    lines.append("\(name): \(error)")
                } else if outcomes[index].image?.isPartial == true {
                    outcomes[index].note = "partial"
                    lines.append("\(name): a partial image (the data ends early)")
                } else {
                    lines.append("\(name): decoded")
                }
            }
            return lines
        }
        return scenario
    }
}
