import Foundation
import WebImageCodecs

// What a server that receives uploads does with the codecs alone: decode, resize, encode, and refuse
// what is not an image. Built from the `WebImageCodecs` product only; check.sh then confirms with `ldd`
// that the binary links neither libcurl nor SQLite.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("CodecsConsumer: \(message)\n".utf8))
    exit(1)
}

let width = 8
let height = 4
var pixels: [UInt8] = []
for y in 0..<height {
    for x in 0..<width { pixels += [UInt8(x * 30), UInt8(y * 60), 200, 255] }
}
let upload = try PNGEncoder().encode(
    Image(
        format: .png, width: width, height: height,
        frames: [ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)]))

let decoded = try ImageDecoderRegistry.shared.decode(upload)
let thumbnail = try ImageTransformer.resize(to: PixelSize(width: 4, height: 2), mode: .fill).transform(decoded)
guard thumbnail.width == 4, thumbnail.height == 2 else {
    fail("the thumbnail is \(thumbnail.width)×\(thumbnail.height)")
}
let webP = try thumbnail.encoded(as: .webp, quality: 90)
guard ImageFormat.detect(webP) == .webp, try ImageDecoderRegistry.shared.decode(webP).width == 4 else {
    fail("the WebP thumbnail does not decode back")
}

do {
    _ = try ImageDecoderRegistry.shared.decode(Data("<html>not an image</html>".utf8))
    fail("an HTML page decoded")
} catch let error as ImageCodecError where error.code == .badImageData {
    print(
        "WebImageCodecs alone: \(width)x\(height) PNG -> 4x2 WebP (\(webP.count) bytes); HTML refused: \(error.message)"
    )
}
