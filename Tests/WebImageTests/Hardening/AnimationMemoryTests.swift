import Foundation
import LocalImageServer
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageCodecs

/// Animations of many frames through the decoders, the transformers, `webimage bulk` and `convert`: every
/// bitmap a transformer makes is claimed before it is made, each frame's bookkeeping is counted, and an
/// animation keeps at most `maximumAnimationFrames` frames.
@Suite(.timeLimit(.minutes(5))) struct AnimationMemoryTests {
    /// A GIF of `frames` 1×1 frames (about 20 bytes each).
    static func tinyFrameGIF(frames: Int) -> Data {
        var gif = TestGIFWriter(width: 1, height: 1, frames: [])
        gif.frames = (0..<frames).map { index in
            TestGIFWriter.Frame(width: 1, height: 1, indices: [UInt8(index % 4)], delayCentiseconds: 2)
        }
        return gif.data()
    }

    /// An image of `frames` 1×1 frames, as a decoder would hand it over.
    static func tinyFrameImage(frames: Int) -> Image {
        let frame = ImageFrame(width: 1, height: 1, bytesPerRow: 4, pixels: [200, 100, 50, 255], duration: 0.02)
        return Image(format: .gif, width: 1, height: 1, frames: Array(repeating: frame, count: frames))
    }

    @Test("A transformer claims the frames it makes first: an animation whose resized frames do not fit is refused")
    func transformerClaimsBeforeResizing() throws {
        // 1,000 frames resized to 256² would be 262 MB of new bitmaps; the budget is 100 MB.
        let budget = DecodeMemoryBudget(limit: 100 << 20)
        let image = Self.tinyFrameImage(frames: 1_000)
        for transformer in [
            ImageTransformer.resize(to: PixelSize(width: 256, height: 256), mode: .fill),
            .pipeline([.applyOrientation, .resize(to: PixelSize(width: 256, height: 256), mode: .pad(.black))]),
        ] {
            let error = #expect(throws: ImageCodecError.self) { try transformer.transform(image, budget: budget) }
            #expect(error?.code == .badImageData)
            #expect(error?.message.contains("maximumDecodeMemory") == true, "\(String(describing: error))")
            #expect(budget.peakBytesInUse == 0, "nothing was claimed, so nothing was made")
        }
    }

    @Test("A transform that fits claims its frames, their bookkeeping and its working planes, then gives them back")
    func transformerClaimFitsAndIsReleased() throws {
        let budget = DecodeMemoryBudget(limit: 100 << 20)
        let image = Self.tinyFrameImage(frames: 100)
        let transformer = ImageTransformer.resize(to: PixelSize(width: 64, height: 64), mode: .fill)
        let result = try transformer.transform(image, budget: budget)
        #expect(result.frames.count == 100 && result.width == 64 && result.height == 64)
        #expect(budget.bytesInUse == 0)
        // 100 frames of 64² RGBA with their bookkeeping, and one frame's float working memory (16 bytes a
        // value): the 1×1 source's plane, the 64 columns of the one row the filter reads, a row of sums.
        let frames = 100 * (64 * 64 * 4 + PixelMemory.frameOverhead)
        #expect(budget.peakBytesInUse >= frames + 16 + 64 * 16 * 2, "peak \(budget.peakBytesInUse)")
        // The claim matches what the transformer says it needs.
        #expect(budget.peakBytesInUse == transformer.memoryNeeded(for: image))
    }

    @Test("A fill's claim counts what it allocates: its window, the source rows it reads, not the whole scaled frame")
    func fillClaimFollowsTheWindow() {
        let frame = ImageFrame(width: 2000, height: 1000, bytesPerRow: 8000, pixels: [])
        let image = Image(format: .png, width: 2000, height: 1000, frames: [frame])
        // `webimage serve`'s rs:fill:6000:6000:1 on 2000×1000: 12000×6000 scaled, the centre 6000² made. The
        // output (144 MB), the source's float plane (32 MB), the window's columns of its 1000 rows (96 MB)
        // and a row of sums: 272 MB, where the old claim (1.6 GB) passed the 1 GiB budget.
        let claim = ImageTransformer.resize(to: PixelSize(width: 6000, height: 6000), mode: .fill)
            .memoryNeeded(for: image)
        #expect(claim == 6000 * 6000 * 4 + 2000 * 1000 * 16 + 6000 * 1000 * 16 + 6000 * 16, "\(claim)")
        // Shrinking reads only the rows under the window's taps: a centre strip of a tall image.
        let tall = Image(
            format: .png, width: 1000, height: 8000,
            frames: [ImageFrame(width: 1000, height: 8000, bytesPerRow: 4000, pixels: [])])
        let strip = ImageTransformer.resize(to: PixelSize(width: 500, height: 100), mode: .fill).memoryNeeded(for: tall)
        #expect(strip < 500 * 100 * 4 + 1000 * 8000 * 16 + 500 * 300 * 16, "\(strip)")
    }

    @Test("The resampler's box reduction reads the 8-bit pixels directly: the same result, no full-size float plane")
    func boxReductionWorkingMemory() {
        // A 4000×3000 frame to 256×192: the float plane is of the 8×-reduced image, not of 12 MP.
        let working = LanczosResampler.workingBytes(
            from: PixelSize(width: 4000, height: 3000), to: PixelSize(width: 256, height: 192))
        #expect(working < 4000 * 3000 * 16 / 16, "\(working) bytes")
        var pixels: [UInt8] = []
        for index in 0..<(40 * 30) {
            pixels += [UInt8(index % 256), UInt8(index / 7 % 256), 90, UInt8(index % 3 * 100)]
        }
        let frame = ImageFrame(width: 40, height: 30, bytesPerRow: 160, pixels: pixels)
        let plane = PremultipliedPlane(frame, boxX: 4, boxY: 3)
        let full = PremultipliedPlane(frame)
        #expect(plane.width == 10 && plane.height == 10)
        // The first box by hand from the full premultiplied plane.
        var sum = SIMD4<Float>.zero
        for y in 0..<3 { for x in 0..<4 { sum += full.values[y * 40 + x] } }
        #expect(plane.values[0] == sum / 12)
    }

    @Test("An animation keeps at most maximumAnimationFrames frames, and its claim counts each frame's bookkeeping")
    func frameLimitAndBookkeeping() throws {
        let data = Self.tinyFrameGIF(frames: 12_000)
        let budget = DecodeMemoryBudget(limit: 1 << 30)
        var options = ImageDecodingOptions()
        options.memoryBudget = budget
        let image = try GIFDecoder().decode(data, options: options)
        #expect(image.frameCount == 12_000)
        #expect(image.frames.count == ImageDecodingOptions.defaultMaximumAnimationFrames)
        #expect(budget.peakBytesInUse >= 10_000 * (4 + PixelMemory.frameOverhead), "peak \(budget.peakBytesInUse)")
        options.maximumAnimationFrames = 50
        #expect(try GIFDecoder().decode(data, options: options).frames.count == 50)
        // A budget that holds the pixels but not the bookkeeping of 12,000 frames keeps fewer.
        options.maximumAnimationFrames = 20_000
        options.memoryBudget = DecodeMemoryBudget(limit: 12_000 * 4 * 10)
        let cut = try GIFDecoder().decode(data, options: options)
        #expect(cut.frames.count < 12_000 * 4 * 10 / PixelMemory.frameOverhead, "\(cut.frames.count) frames")
    }

    @Test("The downloader passes its budget to the transformer: a 1,000-frame GIF filled to 256² is refused")
    func downloaderTransformerBudget() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let gif = Self.tinyFrameGIF(frames: 1_000)
        server.route("/anim.gif") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/gif")], body: .data(gif))
        }
        var config = ImageDownloaderConfig()
        config.maximumDecodeMemory = 100 << 20
        let downloader = ImageDownloader(config: config)
        var context = ImageDownloadContext()
        context.transformer = ImageTransformer.resize(to: PixelSize(width: 256, height: 256), mode: .fill)
        let error = await #expect(throws: ImageDownloaderError.self) {
            try await downloader.image(for: server.url("/anim.gif"), context: context)
        }
        #expect(error?.code == .badImageData)
        #expect(error?.message.contains("maximumDecodeMemory") == true, "\(String(describing: error))")
        // With the first frame only, the same file fills to one 256² frame.
        let first = try await downloader.image(
            for: server.url("/anim.gif"), options: .decodeFirstFrameOnly, context: context)
        #expect(first.image?.frames.count == 1 && first.image?.width == 256)
    }

    @Test("webimage bulk decodes one frame of an animation: a 10,000-frame GIF filled to 256² is a sample")
    func bulkTakesTheFirstFrame() async throws {
        let server = LocalImageServer(root: nil)
        try server.start()
        defer { server.shutdown() }
        let gif = Self.tinyFrameGIF(frames: 10_000)
        #expect(gif.count < 250_000)
        server.route("/anim.gif") { _ in
            LocalImageServer.Response(status: 200, headers: [("Content-Type", "image/gif")], body: .data(gif))
        }
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("list.txt")
        try Data((server.url("/anim.gif").absoluteString + "\n").utf8).write(to: list)
        let output = folder.appendingPathComponent("out")
        let run = try await CLIRunner.run(
            "webimage",
            [
                "bulk", "--allow-destination", "127.0.0.0/8", list.path, "--output", output.path, "--format", "files",
                "--size", "256", "--resize-mode", "fill",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try String(contentsOf: output.appendingPathComponent("00000.jsonl"), encoding: .utf8)
            .split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        #expect(rows.count == 1)
        #expect(rows.first?["status"] as? String == "success", "\(rows)")
        let sample = output.appendingPathComponent("00000/000000000.jpg")
        let image = try ImageDecoderRegistry.shared.decode(try Data(contentsOf: sample))
        #expect(image.width == 256 && image.height == 256)
        // Measured, not asserted: the audit saw 2.6 GB before bulk decoded only the first frame.
        print("bulk over a 10,000-frame GIF: peak RSS \(run.peakRSSKiB / 1024) MB")
    }

    @Test("webimage convert with --thumbnail refuses an animation whose resized frames exceed the budget")
    func convertThumbnailOfManyFrames() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("anim.gif")
        // 5,000 frames filled to 256² need 1.3 GB of new bitmaps, over the 1 GiB budget.
        try Self.tinyFrameGIF(frames: 5_000).write(to: input)
        let output = folder.appendingPathComponent("out.webp")
        let run = try await CLIRunner.run(
            "webimage", ["convert", input.path, output.path, "--thumbnail", "256x256", "--fit", "fill"])
        #expect(!run.signalled)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("maximumDecodeMemory"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path))
        print("convert of a 5,000-frame GIF to 256² frames: peak RSS \(run.peakRSSKiB / 1024) MB")
    }
}

/// giflib's memory over a 2,000,000-frame GIF, apart from ``AnimationMemoryTests``: a test's time limit
/// cannot be longer than its suite's, and this one needs more than that suite's 5 minutes on a busy machine.
// A hang guard, not a speed bound: beside stress-ng's four CPU workers (make test-under-load), and beside a
// release build, the 2,000,000 frames took longer than 5 minutes.
@Suite(.timeLimit(.minutes(20))) struct GIFRecordMemoryTests {
    // Not under AddressSanitizer or ThreadSanitizer: they reserve terabytes of shadow address space, so
    // `ulimit -v` stops the sanitizer itself before the program runs.
    @Test(
        "giflib's per-frame records are freed as it reads: 2,000,000 frames decode within 300 MB of address space",
        .disabled(if: Sanitizers.shadowMemorySanitizerIsOn, "ulimit -v cannot be used under ASan or TSan"))
    func giflibKeepsNoRecordPerFrame() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // 1×1 frames of 15 bytes each, without control extensions: a 30 MB file.
        var bytes =
            [UInt8]("GIF89a".utf8) + [1, 0, 1, 0, 0xF1, 0, 0] + [255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]
        let frame: [UInt8] = [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0]
        bytes.reserveCapacity(bytes.count + frame.count * 2_000_000 + 1)
        for _ in 0..<2_000_000 { bytes += frame }
        bytes.append(0x3B)
        let file = folder.appendingPathComponent("frames.gif")
        try Data(bytes).write(to: file)
        // giflib kept a 56-byte record of every descriptor until the file was closed: 2,000,000 of them ran
        // out of this address space part-way (the file then read as partial, 948,331 frames).
        let run = try await CLIRunner.run("webimage", ["info", "--json", file.path], shell: "ulimit -v 300000")
        #expect(!run.signalled)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\"frames\":2000000"), "\(run.stdout)")
        #expect(run.stdout.contains("\"partial\":false"), "\(run.stdout)")
    }
}
