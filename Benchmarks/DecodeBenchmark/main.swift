// Decode benchmark (not a test): per-image decode time of WebImage's decoders against calling each C
// library directly on the same bytes — tjDecompress2 (JPEG), WebPDecodeRGBA (WebP), libpng's simplified
// png_image_* API (PNG). Run in release:
//
//     swift run -c release DecodeBenchmark [corpus-directory]
//
// The 2 MP inputs are made from the corpus's 36 MP photo: decoded to 1414×1414 by WebImage, then
// encoded with TurboJPEG (q85, 4:2:0), libwebp (lossy q80) and libpng.
import CJPEG
import CPNG
import CWebP
import Foundation
import WebImage

let arguments = CommandLine.arguments.dropFirst()
let corpus = URL(fileURLWithPath: arguments.first ?? "Tests/Fixtures/corpus")
let source = corpus.appendingPathComponent("images/astronaut-36mp.jpg")
guard let photo = try? Data(contentsOf: source) else {
    print("cannot read \(source.path); pass the corpus directory as the first argument")
    exit(1)
}

func fail(_ message: String) -> Never {
    print("error: \(message)")
    exit(1)
}

let side = 1414
let rgba: [UInt8]
do {
    let image = try JPEGDecoder().decode(photo, options: .init(thumbnailPixelSize: .init(width: side, height: side)))
    guard image.width == side, image.height == side, let frame = image.frames.first else { fail("unexpected size") }
    rgba = frame.pixels
} catch {
    fail("\(error)")
}

func encoded(
    _ encode: (UnsafePointer<UInt8>, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>) ->
        Int32,
    free: (UnsafeMutablePointer<UInt8>?) -> Void
) -> Data {
    var output: UnsafeMutablePointer<UInt8>?
    var length = 0
    let status = rgba.withUnsafeBufferPointer { pixels in
        pixels.baseAddress.map { encode($0, &output, &length) } ?? -1
    }
    guard status == 0, let output else { fail("encoding failed") }
    defer { free(output) }
    return Data(bytes: output, count: length)
}

let jpeg = encoded({ wi_bench_tj_encode($0, Int32(side), Int32(side), 85, $1, $2) }, free: { wi_bench_tj_free($0) })
let webp = encoded({ wi_bench_webp_encode($0, Int32(side), Int32(side), 80, $1, $2) }, free: { wi_bench_webp_free($0) })
let png = encoded({ wi_bench_png_encode($0, Int32(side), Int32(side), $1, $2) }, free: { wi_bench_png_free($0) })

/// Calls `body` with the bytes of `data`.
func withBytes(_ data: Data, _ body: (UnsafePointer<UInt8>, Int) -> Int32) -> Int32 {
    data.withUnsafeBytes { raw in
        raw.baseAddress.map { body($0.assumingMemoryBound(to: UInt8.self), raw.count) } ?? -1
    }
}

let baselines: [(name: String, data: Data, decoder: any ImageDecoding, direct: () -> Int32)] = [
    (
        "JPEG", jpeg, JPEGDecoder(),
        {
            withBytes(jpeg) { bytes, count in
                var pixels = [UInt8](repeating: 0, count: side * side * 4)
                return wi_bench_tj_decode(bytes, count, &pixels, Int32(side), Int32(side))
            }
        }
    ),
    (
        "WebP", webp, WebPDecoder(),
        {
            withBytes(webp) { bytes, count in
                var width: Int32 = 0
                var height: Int32 = 0
                return wi_bench_webp_decode(bytes, count, &width, &height)
            }
        }
    ),
    (
        "PNG", png, PNGDecoder(),
        {
            withBytes(png) { bytes, count in
                var pixels = [UInt8](repeating: 0, count: side * side * 4)
                return wi_bench_png_decode(bytes, count, &pixels, Int32(side), Int32(side))
            }
        }
    ),
]

func median(_ values: [Duration]) -> Double {
    let sorted = values.sorted()
    let middle = sorted[sorted.count / 2]
    return Double(middle.components.seconds) * 1000 + Double(middle.components.attoseconds) / 1e15
}

let rounds = 40
let clock = ContinuousClock()
print("2 MP (\(side)×\(side)) decode, median of \(rounds) interleaved rounds, milliseconds per image")
print("format  bytes     WebImage  direct C  ratio")
for entry in baselines {
    var ours: [Duration] = []
    var direct: [Duration] = []
    for round in 0..<(rounds + 3) {
        let a = clock.measure {
            guard (try? entry.decoder.decode(entry.data, options: .default)) != nil else {
                fail("\(entry.name) decode failed")
            }
        }
        let b = clock.measure { if entry.direct() != 0 { fail("\(entry.name) direct decode failed") } }
        if round >= 3 {  // warm-up rounds are dropped
            ours.append(a)
            direct.append(b)
        }
    }
    let (o, d) = (median(ours), median(direct))
    print(
        entry.name.padding(toLength: 8, withPad: " ", startingAt: 0)
            + String(entry.data.count).padding(toLength: 10, withPad: " ", startingAt: 0)
            + String(format: "%8.2f  %8.2f  %5.2fx", o, d, o / d))
}
