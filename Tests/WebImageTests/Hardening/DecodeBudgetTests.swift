import Dispatch
import Foundation
import LocalImageServer
import Locking
import ServerTestSupport
import TestSupport
import Testing

@testable import WebImage
@testable import WebImageCodecs

/// Decoders bound their work and their memory: files that declare far more than they hold, GIF frames far
/// larger than their screen, animations of many frames, many decodes at once, and allocations that fail.
@Suite(.timeLimit(.minutes(3))) struct DecodeBudgetTests {
    static let formats = ["jpeg", "png", "gif", "webp"]

    /// CPU seconds this thread has used (the figure the issue talks about; printed, not asserted).
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    // Serialized: each case may hold a 1 GiB bitmap for a moment; four at once would be 4 GiB.
    @Test(
        "A file of at most 160 bytes declaring 16384² ends in badImageData or a partial image, within the budget",
        .serialized, arguments: formats)
    func tinyFileDeclaringHugeImage(format: String) throws {
        let data = HostileImageFiles.tinyDeclaringHuge(format)
        #expect(data.count <= 160)
        let budget = DecodeMemoryBudget(limit: 1 << 30)
        var options = ImageDecodingOptions()
        options.memoryBudget = budget
        #expect(ImageFormat.detect(data).rawValue == format)
        let start = Self.threadCPUSeconds()
        do {
            let image = try ImageDecoderRegistry.shared.decode(data, options: options)
            #expect(image.isPartial, "\(format): \(data.count) bytes cannot hold a whole 16384² image")
            #expect(image.originalWidth == 16384 && image.originalHeight == 16384)
        } catch let error as ImageCodecError {
            #expect(error.code == .badImageData, "\(format): \(error)")
        }
        print("\(format): \(data.count)-byte file declaring 16384²: \(Self.threadCPUSeconds() - start) s CPU")
        #expect(budget.peakBytesInUse <= budget.limit)
        #expect(budget.bytesInUse == 0, "every claim is given back")
    }

    @Test("A file that needs more than maximumDecodeMemory is refused before anything is allocated", arguments: formats)
    func budgetTooSmallRefusesAtOnce(format: String) throws {
        let data = HostileImageFiles.tinyDeclaringHuge(format)
        let budget = DecodeMemoryBudget(limit: 64 << 20)
        var options = ImageDecodingOptions()
        options.memoryBudget = budget
        let error = #expect(throws: ImageCodecError.self) {
            try ImageDecoderRegistry.shared.decode(data, options: options)
        }
        #expect(error?.code == .badImageData)
        #expect(error?.message.contains("maximumDecodeMemory") == true, "\(String(describing: error))")
        #expect(budget.peakBytesInUse == 0)
    }

    @Test("A 100 KB GIF whose frame is 65535² on a 64² screen decompresses only the rows on the screen")
    func hugeFrameRectangleIsClipped() throws {
        let data = HostileImageFiles.hugeRectangleGIF(screen: 64, pixels: 140_000_000)
        #expect((90_000...110_000).contains(data.count), "\(data.count) bytes")
        let start = Self.threadCPUSeconds()
        let (image, pixelsDecoded) = try GIFDecoder().decodeCounting(data, options: .default)
        print(
            "huge-rectangle GIF (\(data.count) bytes): \(Self.threadCPUSeconds() - start) s CPU, \(pixelsDecoded) pixels decompressed"
        )
        // 64 visible rows of 65,535 pixels; without the clipping giflib decompresses all 140 million.
        #expect(pixelsDecoded == 64 * 65535)
        #expect(image.width == 64 && image.height == 64 && !image.isPartial)
        let pixels = image.frames[0].pixels
        var wrong = 0
        for offset in stride(from: 0, to: pixels.count, by: 4)
        where pixels[offset] != 0 || pixels[offset + 1] != 0 || pixels[offset + 2] != 255 || pixels[offset + 3] != 255 {
            wrong += 1
        }
        #expect(wrong == 0, "every screen pixel is the frame's color (palette index 1, blue)")
    }

    @Test("An interlaced frame past the screen is clipped too; its decompression is bounded by its data")
    func interlacedHugeFrame() throws {
        let data = HostileImageFiles.hugeRectangleGIF(
            screen: 64, frameWidth: 4096, frameHeight: 4096, pixels: 4096 * 4096, interlaced: true)
        let start = Self.threadCPUSeconds()
        let (image, pixelsDecoded) = try GIFDecoder().decodeCounting(data, options: .default)
        print(
            "interlaced 4096² frame on a 64² screen (\(data.count) bytes): \(Self.threadCPUSeconds() - start) s CPU, \(pixelsDecoded) pixels decompressed"
        )
        #expect(image.width == 64 && image.height == 64)
        // Its last visible row (63) comes in the fourth pass, after every row of the first three.
        #expect(pixelsDecoded < 4096 * 4096)
        #expect(pixelsDecoded >= 4096 * (4096 / 2))
    }

    @Test("Animations are budgeted by canvas pixels × frames, thumbnail or not")
    func animationWorkBudget() throws {
        var gif = TestGIFWriter(width: 4096, height: 4096, frames: [])
        gif.frames = (0..<100).map { index in
            TestGIFWriter.Frame(left: index, top: 0, width: 1, height: 1, indices: [UInt8(index % 4)])
        }
        let data = gif.data()
        for thumbnail in [nil, PixelSize(width: 64, height: 64)] {
            var options = ImageDecodingOptions(thumbnailPixelSize: thumbnail)
            options.maximumImagePixels = 4096 * 4096 * 10
            let image = try GIFDecoder().decode(data, options: options)
            #expect(image.frameCount == 100)
            #expect(image.frames.count == 10, "canvas 4096² × 10 frames is the limit; got \(image.frames.count)")
            #expect(!image.isPartial)
        }
    }

    @Test("16 decodes at once wait for the budget, never hold more than it, and all finish")
    func concurrentDecodesStayUnderBudget() throws {
        // Each needs a 1024² canvas (4 MiB) and its 4096² frame clipped to it: 16 at once would hold 64 MiB.
        let data = HostileImageFiles.hugeRectangleGIF(
            screen: 1024, frameWidth: 4096, frameHeight: 4096, pixels: 4096 * 1100)
        let budget = DecodeMemoryBudget(limit: 9 << 20)
        var budgeted = ImageDecodingOptions()
        budgeted.memoryBudget = budget
        let options = budgeted
        let results = Lock<[Result<Image, any Error>]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let result = Result { try GIFDecoder().decode(data, options: options) }
            results.withLock { $0.append(result) }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 16)
        #expect(all.filter { (try? $0.get())?.width == 1024 }.count == 16)
        #expect(budget.peakBytesInUse <= 9 << 20)
        #expect(budget.peakBytesInUse >= 4 << 20, "the decodes did claim their canvases")
        #expect(budget.bytesInUse == 0)
    }

    @Test("A claim that does not fit in time fails with badImageData; progressive claims never wait")
    func claimsWaitThenFail() throws {
        let budget = DecodeMemoryBudget(limit: 100, waitTimeout: 0.2)
        let held = try budget.claim(80, for: "first", waits: true)
        #expect(throws: ImageCodecError.self) { try budget.claim(30, for: "partial", waits: false) }
        let error = #expect(throws: ImageCodecError.self) { try budget.claim(30, for: "second", waits: true) }
        #expect(error?.code == .badImageData)
        // Released from another thread while a claim waits: the waiting claim then succeeds.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { held.release() }
        let slow = DecodeMemoryBudget(limit: 100, waitTimeout: 30)
        let first = try slow.claim(80, for: "first", waits: true)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { first.release() }
        let second = try slow.claim(30, for: "second", waits: true)
        #expect(slow.bytesInUse == 30)
        second.release()
        #expect(slow.bytesInUse == 0 && slow.peakBytesInUse == 80)
    }

    // Not under AddressSanitizer or ThreadSanitizer: they reserve terabytes of shadow address space, so
    // `ulimit -v` stops the sanitizer itself before the program runs.
    @Test(
        "An allocation the system refuses is a badImageData error, not a crash",
        .disabled(if: Sanitizers.shadowMemorySanitizerIsOn, "ulimit -v cannot be used under ASan or TSan"))
    func failedAllocationIsAnError() async throws {
        let folder = try CLIRunner.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for format in Self.formats {
            let file = folder.appendingPathComponent("huge.\(format)")
            try HostileImageFiles.tinyDeclaringHuge(format).write(to: file)
            // 600 MB of address space: the program runs, a 1 GiB bitmap cannot be had.
            let output = try await CLIRunner.run("webimage", ["info", file.path], shell: "ulimit -v 600000")
            #expect(!output.signalled, "\(format): the process died: \(output.stderr)")
            #expect(output.status == 1)
            #expect(output.stderr.contains("badImageData"), "\(format): \(output.stderr)")
            #expect(output.stderr.contains("could not allocate"), "\(format): \(output.stderr)")
        }
    }

    @Test("The downloader's maximumDecodeMemory reaches its decodes: too big a file fails with badImageData")
    func downloaderBudget() throws {
        let server = try Fixtures.server()
        defer { server.shutdown() }
        server.setFile(name: "huge.png", data: HostileImageFiles.png(side: 8192), contentType: "image/png")
        server.setFile(name: "small.gif", data: HostileImageFiles.gif(side: 512), contentType: "image/gif")
        var config = ImageDownloaderConfig()
        config.maximumDecodeMemory = 16 << 20
        let downloader = ImageDownloader(config: config)
        defer { downloader.invalidate(cancelPendingDownloads: true) }
        let recorder = CallbackRecorder()
        downloader.downloadImage(with: server.url("/files/huge.png"), completed: recorder.completion(0))
        downloader.downloadImage(with: server.url("/files/small.gif"), completed: recorder.completion(1))
        #expect(recorder.waitForTerminal(2))
        let huge = recorder.terminals(tag: 0)
        #expect(huge.count == 1)
        #expect(huge.first?.error?.code == .badImageData)
        #expect(huge.first?.error?.message.contains("maximumDecodeMemory") == true)
        // 512² needs 1 MiB: within the budget, decoded (partially: the file ends after a few codes).
        #expect(recorder.terminals(tag: 1).first?.image?.width == 512)
    }
}
