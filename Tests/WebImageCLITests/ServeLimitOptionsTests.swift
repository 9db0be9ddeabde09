import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// imgproxy's per-URL security options (`msr`, `msfs`, `maf`, `mafr`, `mrd`) and `preserve_hdr` through
/// `webimage serve` run as a child process on 127.0.0.1: refused with 403 unless
/// `--allow-security-options` (or `IMGPROXY_ALLOW_SECURITY_OPTIONS`) is on, and then honoured under the
/// server's limits.
@Suite("webimage serve: per-URL limit options", .timeLimit(.minutes(5)))
struct ServeLimitOptionsTests {
    /// A running origin serving the 200×100 quadrants PNG at `/files/quadrants.png` and the 120×80 GIF of
    /// four frames at `/files/dance.gif`, and `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess
        /// The quadrants PNG's size in bytes.
        let sourceBytes: Int

        init(_ arguments: [String] = ["--allow-security-options"], environment: [String: String] = [:])
            async throws
        {
            origin = try Fixtures.server()
            let quadrants = try ServeGeometryTests.quadrants()
            sourceBytes = quadrants.count
            origin.setFile(name: "quadrants.png", data: quadrants)
            origin.setFile(name: "dance.gif", data: try ServeAnimationTests.animation())
            serve = try await ServeProcess.start(
                ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"] + arguments, environment: environment)
        }

        /// `options` on `/files/NAME` (or another origin path), as `ext`.
        func get(_ options: String, _ path: String = "/files/quadrants.png", ext: String = "png") async throws
            -> ServeProcess.Reply
        {
            try await serve.get("/insecure/\(options)/plain/\(origin.url(path).absoluteString)@\(ext)")
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    static func text(_ reply: ServeProcess.Reply) -> String {
        "\(reply.status) " + String(decoding: reply.body, as: UTF8.self)
    }

    @Test("without --allow-security-options each limit option is 403, presets too; ph is accepted anyway")
    func refusedUnlessAllowed() async throws {
        let setup = try await Setup(["--preset", "small=mrd:20"])
        for options in [
            "msr:1", "max_src_resolution:1", "msfs:100000", "max_src_file_size:100000", "maf:2",
            "max_animation_frames:2", "mafr:1", "max_animation_frame_resolution:1", "mrd:20",
            "max_result_dimension:20", "pr:small",
        ] {
            let reply = try await setup.get("w:50/\(options)")
            #expect(reply.status == 403, "\(options): \(Self.text(reply))")
            #expect(Self.text(reply).contains("security processing options are not allowed"), "\(options)")
        }
        for options in ["ph:1", "preserve_hdr:false"] {
            let reply = try await setup.get("w:50/\(options)")
            #expect(reply.status == 200, "\(options): \(Self.text(reply))")
        }
        await setup.stop()
        // IMGPROXY_ALLOW_SECURITY_OPTIONS turns them on as the flag does.
        let allowed = try await Setup([], environment: ["IMGPROXY_ALLOW_SECURITY_OPTIONS": "true"])
        let reply = try await allowed.get("w:50/mrd:20")
        #expect(reply.status == 200, "\(Self.text(reply))")
        #expect(ServeProcess.pngSize(reply.body).map { [$0.width, $0.height] } == [20, 10])
        await allowed.stop()
    }

    @Test("msfs: a source one byte over is 422, from the origin and from the source cache; at the size, 200")
    func sourceFileSize() async throws {
        let setup = try await Setup()
        let bytes = setup.sourceBytes
        let over = try await setup.get("w:50/msfs:\(bytes - 1)")
        #expect(over.status == 422 && Self.text(over).contains("larger than allowed"), "\(Self.text(over))")
        #expect(try await setup.get("w:50/max_src_file_size:\(bytes)").status == 200)
        // imgproxy's 0 (no limit) is the server's limit here.
        #expect(try await setup.get("w:50/msfs:0").status == 200)
        // A source the cache holds from a request without a limit is still measured against the URL's.
        let cached = "/cache/max-age=600/quadrants.png"
        #expect(try await setup.get("w:40", cached).status == 200)
        let fromCache = try await setup.get("w:50/msfs:\(bytes - 1)", cached)
        #expect(fromCache.status == 422, "\(Self.text(fromCache))")
        #expect(try await setup.get("w:50/msfs:\(bytes)", cached).status == 200)
        await setup.stop()
    }

    @Test("msr: a source over the URL's megapixels is 422; a larger msr than the server's changes nothing")
    func sourceResolution() async throws {
        let setup = try await Setup(["--allow-security-options", "--max-source-pixels", "30000"])
        // 200×100 = 0.02 megapixels.
        let over = try await setup.get("w:50/msr:0.019999")
        #expect(over.status == 422 && Self.text(over).contains("more pixels"), "\(Self.text(over))")
        #expect(try await setup.get("w:50/msr:0.0201").status == 200)
        #expect(try await setup.get("w:50/msr:0").status == 422, "msr:0 refuses every source, as imgproxy's")
        // The server's 30,000 pixels still hold for a source of 0.0392 megapixels (GIF 120×80, four frames
        // kept for a GIF result: 38,400 pixels together).
        let raised = try await setup.get("msr:100", "/files/dance.gif", ext: "gif")
        #expect(raised.status == 422, "\(Self.text(raised))")
        await setup.stop()
    }

    @Test("maf: an animation of more frames than the URL's is 422; at the count it keeps every frame")
    func animationFrames() async throws {
        let setup = try await Setup()
        let over = try await setup.get("w:60/maf:3", "/files/dance.gif", ext: "gif")
        #expect(over.status == 422 && Self.text(over).contains("animation frames"), "\(Self.text(over))")
        let kept = try await setup.get("w:60/max_animation_frames:4", "/files/dance.gif", ext: "gif")
        #expect(kept.status == 200, "\(Self.text(kept))")
        let image = try ImageDecoderRegistry.shared.decode(kept.body)
        #expect(image.frames.count == 4 && image.width == 60)
        await setup.stop()
    }

    @Test("mafr: an animated result whose frames pass the URL's megapixels is 422; a still one is not checked")
    func animationFrameResolution() async throws {
        let setup = try await Setup()
        // 120×80 = 9,600 pixels a frame.
        let over = try await setup.get("w:60/mafr:0.0095", "/files/dance.gif", ext: "gif")
        #expect(
            over.status == 422 && Self.text(over).contains("animation frames have more pixels"), "\(Self.text(over))")
        #expect(try await setup.get("w:60/mafr:0.0097", "/files/dance.gif", ext: "gif").status == 200)
        #expect(try await setup.get("w:60/mafr:0.0095", "/files/dance.gif", ext: "png").status == 200)
        await setup.stop()
    }

    @Test("mrd bounds the result as --max-result-dimension does, and never raises the server's")
    func resultDimension() async throws {
        let setup = try await Setup(["--allow-security-options", "--max-result-dimension", "150"])
        let bounded = try await setup.get("w:200/mrd:50")
        #expect(ServeProcess.pngSize(bounded.body).map { [$0.width, $0.height] } == [50, 25], "\(Self.text(bounded))")
        let raised = try await setup.get("w:200/mrd:1000")
        #expect(ServeProcess.pngSize(raised.body).map { [$0.width, $0.height] } == [150, 75], "\(Self.text(raised))")
        let none = try await setup.get("w:200/mrd:0")
        #expect(ServeProcess.pngSize(none.body).map { [$0.width, $0.height] } == [150, 75], "\(Self.text(none))")
        await setup.stop()
    }

    @Test("a limit is part of the ETag and the result cache key: a cached result is not served past a URL's limit")
    func cacheKey() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let setup = try await Setup(["--allow-security-options", "--cache-dir", folder.path])
        let plain = try await setup.get("w:50")
        #expect(plain.status == 200)
        // The same result, asked again, comes from the cache.
        #expect(try await setup.get("w:50").status == 200)
        let limited = try await setup.get("w:50/msfs:\(setup.sourceBytes - 1)")
        #expect(limited.status == 422, "\(Self.text(limited))")
        let allowing = try await setup.get("w:50/msfs:\(setup.sourceBytes)")
        #expect(allowing.status == 200 && allowing.body == plain.body)
        let etags = [plain, allowing].compactMap { $0.header("ETag") }
        #expect(etags.count == 2 && etags[0] != etags[1], "\(etags)")
        await setup.stop()
    }
}
