// thumbnailer — the smallest useful embedding of WebImage: download images, decode them straight to a
// thumbnail size, and write PNGs.
//
//     thumbnailer OUTDIR [--size N] URL...      (with no URL, reads one URL per line from stdin)
//
// Each URL becomes OUTDIR/<n>-<name>.png, at most N×N pixels (128 by default), aspect ratio kept.
import Foundation
import WebImage

var arguments = Array(CommandLine.arguments.dropFirst())
var size = 128
if let flag = arguments.firstIndex(of: "--size"), flag + 1 < arguments.count, let value = Int(arguments[flag + 1]),
    value > 0
{
    size = value
    arguments.removeSubrange(flag...(flag + 1))
}
guard let outputPath = arguments.first else {
    FileHandle.standardError.write(Data("usage: thumbnailer OUTDIR [--size N] [URL...]\n".utf8))
    exit(2)
}
var lines = Array(arguments.dropFirst())
if lines.isEmpty {
    while let line = readLine() { lines.append(line) }
}
let urls = lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.compactMap(URL.init(string:))
let output = URL(fileURLWithPath: outputPath, isDirectory: true)
do {
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
} catch {
    FileHandle.standardError.write(Data("cannot create \(output.path): \(error)\n".utf8))
    exit(1)
}

// One downloader for the whole run: downloads run in parallel on its queue (6 at a time by default).
let downloader = ImageDownloader()
let context = ImageDownloadContext(thumbnailPixelSize: PixelSize(width: size, height: size))
let failures = await withTaskGroup(of: Bool.self) { group in
    for (index, url) in urls.enumerated() {
        group.addTask {
            do {
                let result = try await downloader.image(for: url, context: context)
                guard let image = result.image else { return false }
                let name = "\(index + 1)-\(url.deletingPathExtension().lastPathComponent).png"
                try PNGEncoder().encode(image).write(to: output.appendingPathComponent(name))
                print("\(url.absoluteString) -> \(name) (\(image.width)x\(image.height))")
                return true
            } catch {
                FileHandle.standardError.write(Data("\(url.absoluteString): \(error)\n".utf8))
                return false
            }
        }
    }
    var failed = 0
    for await succeeded in group where !succeeded { failed += 1 }
    return failed
}
// Every download has ended; let the transport close its connections before the process exits (the
// README's advice for command-line tools).
await downloader.invalidate()
exit(failures == 0 ? 0 : 1)
