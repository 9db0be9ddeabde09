import Foundation
import WebImage

// The thumbnail pipeline benchmark (issue 14): each 2 MP JPEG of the file set → a 256×256 `fill`
// thumbnail (cover, centre crop) → JPEG at quality 85, on one thread. WebImage runs in this process;
// libvips' `vipsthumbnail` and Pillow run as programs, measured from outside (wait4), with the CPU of
// the same program started on no image subtracted (start-up and imports are not per-image work).

/// The box every client fills.
let thumbnailBox = 256

/// WebImage: shrink-on-load decode (DCT scaling), `ImageTransformer.resize(.fill)` (Lanczos-3), JPEGEncoder.
func runWebImageThumbnailClient(paths: [String], passes: Int) -> Sample {
    let files = loadFiles(paths)
    let transformer = ImageTransformer.resize(
        to: PixelSize(width: thumbnailBox, height: thumbnailBox), mode: .fill)
    var options = ImageDecodingOptions()
    options.minimumDecodeSize = transformer.minimumDecodeSize
    let encoder = JPEGEncoder(quality: 85)
    var bytes = 0
    var decodeNanoseconds: UInt64 = 0
    let watch = Stopwatch()
    for _ in 0..<passes {
        for file in files {
            do {
                let start = DispatchTime.now().uptimeNanoseconds
                let decoded = try ImageDecoderRegistry.shared.decode(file, options: options)
                decodeNanoseconds += DispatchTime.now().uptimeNanoseconds - start
                let image = try transformer.transform(decoded)
                guard image.width == thumbnailBox, image.height == thumbnailBox else { fail("wrong thumbnail size") }
                bytes += try encoder.encode(image).count
            } catch {
                fail("thumbnail failed: \(error)")
            }
        }
    }
    let wall = watch.wallSeconds
    let cpu = watch.cpuSeconds
    return Sample(
        wall: wall, cpu: cpu, maxRSSKiB: Stopwatch.peakRSSKiB(), items: files.count * passes, bytes: bytes,
        extra: ["decodeMs": Double(decodeNanoseconds) / 1e6 / Double(files.count * passes)])
}

/// An external thumbnailer: `command(files)` is run on the files repeated `passes` times, and once on no
/// file; the sample is the difference.
func runExternalThumbnailClient(paths: [String], passes: Int, command: ([String]) -> [String]) -> Sample {
    let repeated = Array(repeating: paths, count: passes).flatMap { $0 }
    let idle = runChild(command([]))
    let outcome = runChild(command(repeated))
    guard outcome.status == 0 else { fail("\(command([]).joined(separator: " ")) failed: \(outcome.stdout)") }
    return Sample(
        wall: max(0, outcome.wall - idle.wall), cpu: max(0, outcome.cpu - idle.cpu), maxRSSKiB: outcome.maxRSSKiB,
        items: repeated.count, bytes: 0, extra: ["startupCPU": idle.cpu])
}

/// `vipsthumbnail` (libvips' own shrink-on-load, crop to the centre, JPEG Q=85), one worker thread.
func vipsthumbnailCommand(output: String) -> ([String]) -> [String] {
    { files in
        [
            "/usr/bin/env", "VIPS_CONCURRENCY=1", "vipsthumbnail", "--size", "\(thumbnailBox)x\(thumbnailBox)",
            "--smartcrop", "centre", "-o", output + "/%s.jpg[Q=85]",
        ] + (files.isEmpty ? [] : files)
    }
}

/// Pillow: `Image.thumbnail` (which uses JPEG draft mode, then LANCZOS) to the covering size, a centre
/// crop, `save` as JPEG quality 85 into memory.
func pillowCommand(python: String) -> ([String]) -> [String] {
    let script = """
        import io, sys
        from PIL import Image
        box = \(thumbnailBox)
        for path in sys.argv[1:]:
            im = Image.open(path)
            w, h = im.size
            scale = box / min(w, h)
            im.thumbnail((max(box, round(w * scale)), max(box, round(h * scale))), Image.LANCZOS)
            w, h = im.size
            left, top = (w - box) // 2, (h - box) // 2
            im = im.crop((left, top, left + box, top + box))
            im.convert("RGB").save(io.BytesIO(), "JPEG", quality=85)
        """
    return { files in [python, "-c", script] + files }
}

/// Where WebImage's thumbnail time goes: decode, transform and encode timed apart over many runs (printed,
/// not a sample the report reads; for profiling by hand: `WebImageBench thumbnail-parts --files FILE`).
func runThumbnailPartsClient(paths: [String], passes: Int) {
    let files = loadFiles(paths)
    let transformer = ImageTransformer.resize(to: PixelSize(width: thumbnailBox, height: thumbnailBox), mode: .fill)
    var options = ImageDecodingOptions()
    options.minimumDecodeSize = transformer.minimumDecodeSize
    func time(_ label: String, _ body: () -> Void) {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<passes { body() }
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 / Double(passes * files.count)
        print("\(label): \(milliseconds) ms/image")
    }
    let decoded = files.compactMap { try? ImageDecoderRegistry.shared.decode($0, options: options) }
    let small = decoded.compactMap { try? transformer.transform($0) }
    time("full decode") { for file in files { _ = try? ImageDecoderRegistry.shared.decode(file) } }
    time("shrink-on-load decode") {
        for file in files { _ = try? ImageDecoderRegistry.shared.decode(file, options: options) }
    }
    time("fill transform") { for image in decoded { _ = try? transformer.transform(image) } }
    time("JPEG q85 encode") { for image in small { _ = try? JPEGEncoder(quality: 85).encode(image) } }
}
