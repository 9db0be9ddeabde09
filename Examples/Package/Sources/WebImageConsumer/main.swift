import Foundation
import WebImage

// Encodes a 3×2 gradient as PNG with WebImage, decodes it back through the decoder registry, and
// checks the round trip: proof that the library links and works when it is someone else's dependency.
let width = 3
let height = 2
var pixels: [UInt8] = []
for y in 0..<height {
    for x in 0..<width { pixels += [UInt8(x * 100), UInt8(y * 200), 50, 255] }
}
let frame = ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels)
let image = Image(format: .png, width: width, height: height, frames: [frame])
let png = try PNGEncoder().encode(image)
let decoded = try ImageDecoderRegistry.shared.decode(png)
guard decoded.width == width, decoded.height == height, decoded.frames.first?.pixels == pixels else {
    FileHandle.standardError.write(Data("round trip changed the image\n".utf8))
    exit(1)
}
print(
    "WebImage \(LibraryVersions.webImage) (libpng \(LibraryVersions.png)) as a dependency: "
        + "PNG round trip of \(width)x\(height) ok")
