import Foundation
import LocalImageServer
import ServerTestSupport
import TestSupport
import Testing
import WebImage

/// `preserve_hdr` (`ph`) and `IMGPROXY_PRESERVE_HDR` through `webimage serve` run as a child process on
/// 127.0.0.1: a 16-bit PNG source resized to a PNG stays 16 bits a channel, and the pixels are the 8-bit
/// result's within a level; without the option, or for a JPEG result, 8 bits.
@Suite("webimage serve: preserve_hdr", .timeLimit(.minutes(5)))
struct ServePreserveHDRTests {
    /// The bit depth a PNG's IHDR declares.
    static func bitDepth(_ png: Data) -> Int? { png.count > 24 ? Int(png[png.startIndex + 24]) : nil }

    static var sixteen: ImageDecodingOptions {
        var options = ImageDecodingOptions.default
        options.keepsSixteenBits = true
        return options
    }

    /// A smooth 192×128 RGB gradient at 16 bits a channel (red across, green down, blue along the diagonal), as
    /// a 16-bit PNG. Smooth, so the 8-bit result (whose PNG decode may shrink on load) and the 16-bit one
    /// (decoded at full size) differ only by rounding.
    static func gradient() throws -> Data {
        let (width, height) = (192, 128)
        var samples = [UInt16]()
        for y in 0..<height {
            for x in 0..<width {
                samples += [
                    UInt16(x * 65535 / (width - 1)), UInt16(y * 65535 / (height - 1)),
                    UInt16((x + y) * 65535 / (width + height - 2)), 65535,
                ]
            }
        }
        let pixels = samples.map { UInt8((UInt32($0) + 128) / 257) }
        let frame = ImageFrame(
            width: width, height: height, bytesPerRow: width * 4, pixels: pixels, deepPixels: samples)
        let png = try PNGEncoder().encode(Image(format: .png, width: width, height: height, frames: [frame]))
        #expect(bitDepth(png) == 16)
        return png
    }

    /// The gradient at `/files/gradient16.png` of a running origin, and `webimage serve`.
    struct Setup {
        let origin: LocalImageServer
        let serve: ServeProcess

        init(environment: [String: String] = [:]) async throws {
            origin = try Fixtures.server()
            origin.setFile(name: "gradient16.png", data: try ServePreserveHDRTests.gradient())
            serve = try await ServeProcess.start(
                ["--allow-unsigned", "--allow-destination", "127.0.0.0/8"], environment: environment)
        }

        func get(_ options: String, ext: String = "png") async throws -> ServeProcess.Reply {
            try await serve.get(
                "/insecure/\(options)/plain/\(origin.url("/files/gradient16.png").absoluteString)@\(ext)")
        }

        func stop() async {
            #expect(await serve.stop() == 0)
            origin.shutdown()
        }
    }

    @Test("ph:1 gives a 16-bit PNG of the 8-bit result's pixels within a level; ph:0 and JPEG give 8 bits")
    func preservesSixteenBits() async throws {
        let setup = try await Setup()
        let deep = try await setup.get("rs:fit:100:80/ph:1")
        #expect(deep.status == 200)
        #expect(Self.bitDepth(deep.body) == 16)
        #expect(ServeProcess.pngSize(deep.body).map { [$0.width, $0.height] } == [100, 67])
        let decoded = try PNGDecoder().decode(deep.body, options: Self.sixteen)
        let samples = try #require(decoded.frames[0].sixteenBitSamples)
        #expect(samples.contains { $0 % 257 != 0 }, "16-bit levels, not 8-bit ones widened")
        for options in ["rs:fit:100:80", "rs:fit:100:80/ph:0", "rs:fit:100:80/preserve_hdr:false"] {
            let plain = try await setup.get(options)
            #expect(plain.status == 200 && Self.bitDepth(plain.body) == 8, "\(options)")
            let pixels = try PNGDecoder().decode(plain.body, options: .default).frames[0].pixels
            let worst = zip(pixels, decoded.frames[0].pixels).map { abs(Int($0) - Int($1)) }.max() ?? 255
            #expect(pixels.count == decoded.frames[0].pixels.count && worst <= 2, "\(options): \(worst) levels")
        }
        // Turned and extended onto a larger (transparent) canvas: still 16 bits. An effect works at 8 bits.
        let extended = try await setup.get("rs:fit:60:60/ex:1/rot:90/ph:1")
        #expect(extended.status == 200 && Self.bitDepth(extended.body) == 16)
        #expect(ServeProcess.pngSize(extended.body).map { [$0.width, $0.height] } == [60, 60])
        let blurred = try await setup.get("rs:fit:60:60/bl:2/ph:1")
        #expect(blurred.status == 200 && Self.bitDepth(blurred.body) == 8)
        // A JPEG result is a JPEG.
        let turned = try await setup.get("rs:fill:60:40/rot:90/preserve_hdr:true")
        #expect(Self.bitDepth(turned.body) == 16)
        #expect(ServeProcess.pngSize(turned.body).map { [$0.width, $0.height] } == [60, 40])
        let jpeg = try await setup.get("rs:fit:100:80/ph:1", ext: "jpg")
        #expect(jpeg.status == 200 && jpeg.body.prefix(3) == Data([0xFF, 0xD8, 0xFF]))
        await setup.stop()
    }

    @Test("IMGPROXY_PRESERVE_HDR=true makes 16 bits the default, and ph:0 turns it off")
    func serverDefault() async throws {
        let setup = try await Setup(environment: ["IMGPROXY_PRESERVE_HDR": "true"])
        #expect(Self.bitDepth(try await setup.get("rs:fit:50:50").body) == 16)
        #expect(Self.bitDepth(try await setup.get("rs:fit:50:50/ph:0").body) == 8)
        await setup.stop()
    }
}
