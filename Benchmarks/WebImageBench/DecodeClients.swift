import CBenchCodecs
import Foundation
import Synchronization
import WebImage

// The decode clients. Files are read into memory before the stopwatch starts.

func loadFiles(_ paths: [String]) -> [Data] {
    paths.map { path in
        guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        return data
    }
}

/// Decode-only throughput: `threads` dedicated threads decode `files` through
/// `ImageDecoderRegistry.shared` (the decoders the downloader uses), each taking the next file as it
/// finishes one. Not `concurrentPerform`: with few iterations it may run them all on the calling
/// thread before a worker wakes up, leaving a core idle.
func runDecodeOnlyClient(paths: [String], threads: Int) -> Sample {
    let files = loadFiles(paths)
    let failures = Atomic<Int>(0)
    let next = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    let watch = Stopwatch()
    for _ in 0..<threads {
        Thread {
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < files.count else { break }
                if ((try? ImageDecoderRegistry.shared.decode(files[index]))?.width ?? 0) == 0 {
                    failures.add(1, ordering: .relaxed)
                }
            }
            done.signal()
        }.start()
    }
    for _ in 0..<threads { done.wait() }
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    guard failures.load(ordering: .relaxed) == 0 else { fail("decode-only: some images failed to decode") }
    return Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: files.count,
        bytes: files.reduce(0) { $0 + $1.count })
}

/// One thread decodes every file `passes` times, either with WebImage's decoder (`swift`) or with the
/// C library called directly (`c`): TurboJPEG's tjDecompress2, libpng's simplified API, WebPDecodeRGBA,
/// libavif, libjxl, libheif's heif_decode_image — each into RGBA8, allocating the output per image as a
/// caller would.
func runDecoderClient(paths: [String], implementation: String, passes: Int) -> Sample {
    let files = loadFiles(paths)
    let decode: (Data) -> Bool
    switch implementation {
    case "swift":
        decode = { data in ((try? ImageDecoderRegistry.shared.decode(data))?.width ?? 0) > 0 }
    case "c":
        decode = decodeWithCLibrary
    default:
        fail("unknown decoder implementation \(implementation)")
    }
    let watch = Stopwatch()
    for _ in 0..<passes {
        for file in files where !decode(file) { fail("\(implementation) decoder failed") }
    }
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    return Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: files.count * passes,
        bytes: files.reduce(0) { $0 + $1.count } * passes)
}

private func decodeWithCLibrary(_ data: Data) -> Bool {
    data.withUnsafeBytes { raw -> Bool in
        guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        var width: Int32 = 0
        var height: Int32 = 0
        switch ImageFormat.detect(data) {
        case .jpeg:
            guard wi_bench_tj_size(base, raw.count, &width, &height) == 0 else { return false }
            let pixels = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(width) * Int(height) * 4)
            defer { pixels.deallocate() }
            return wi_bench_tj_decode(base, raw.count, pixels, width, height) == 0
        case .png:
            guard wi_bench_png_size(base, raw.count, &width, &height) == 0 else { return false }
            let pixels = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(width) * Int(height) * 4)
            defer { pixels.deallocate() }
            return wi_bench_png_decode(base, raw.count, pixels, width, height) == 0
        case .webp:
            return wi_bench_webp_decode(base, raw.count, &width, &height) == 0
        case .avif:
            return wi_bench_avif_decode(base, raw.count, &width, &height) == 0
        case .jxl:
            return wi_bench_jxl_decode(base, raw.count, &width, &height) == 0
        case .heic:
            return wi_bench_heif_decode(base, raw.count, &width, &height) == 0
        default:
            return false
        }
    }
}

/// Peak RSS of one scaled-down decode of the 54 MP JPEG: downloaded through `ImageDownloader` with
/// `.scaleDownLargeImages` (`url` given), or decoded from the file alone (`path` given).
func runBigJPEGClient(url: String?, path: String?) -> Sample {
    let baseline = Stopwatch.currentRSSKiB()
    let watch = Stopwatch()
    var width = 0
    var height = 0
    var compressed = 0
    if let url {
        let downloader = ImageDownloader()
        let result = Mutex<(Image?, Int, String?)>((nil, 0, nil))
        let done = DispatchSemaphore(value: 0)
        downloader.downloadImage(with: URL(string: url), options: [.scaleDownLargeImages]) {
            image, data, error, finished in
            guard finished else { return }
            result.withLock { $0 = (image, data?.count ?? 0, error.map { "\($0)" }) }
            done.signal()
        }
        done.wait()
        let (image, bytes, error) = result.withLock { $0 }
        guard let image else { fail("54 MP download failed: \(error ?? "no image")") }
        (width, height, compressed) = (image.width, image.height, bytes)
    } else if let path {
        let data = loadFiles([path])[0]
        let options = ImageDecodingOptions(scaleDownLargeImages: true)
        guard let image = try? ImageDecoderRegistry.shared.decode(data, options: options) else {
            fail("54 MP decode failed")
        }
        (width, height, compressed) = (image.width, image.height, data.count)
    }
    var sample = Sample(
        wall: watch.wallSeconds, cpu: watch.cpuSeconds, maxRSSKiB: Stopwatch.peakRSSKiB(), items: 1, bytes: compressed)
    sample.extra["width"] = Double(width)
    sample.extra["height"] = Double(height)
    sample.extra["baselineRSSKiB"] = Double(baseline)
    return sample
}
