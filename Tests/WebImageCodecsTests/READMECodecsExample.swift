import Foundation
import WebImageCodecs

/// The README's example of the codecs used alone (in "Using WebImage from another package"), compiled with
/// this test target: `make test-readme` checks that the README's block is these lines, imports aside.
/// READMECodecsExampleTests runs it: what it prints is returned.
enum READMECodecsExample {
    static func main() throws -> [String] {
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        // README: begin
        /// An uploaded image as a 512×512 WebP thumbnail, or nil when it is not an image WebImage can read.
        func thumbnail(ofUpload upload: Data) throws -> Data? {
            let resize = ImageTransformer.resize(to: PixelSize(width: 512, height: 512), mode: .fill)
            var options = ImageDecodingOptions(maximumImagePixels: 50_000_000)
            options.minimumDecodeSize = resize.minimumDecodeSize  // shrink-on-load: JPEG decodes at a DCT scale
            do {
                let image = try ImageDecoderRegistry.shared.decode(upload, options: options)
                return try resize.transform(image).encoded(as: .webp, quality: 80)
            } catch let error as ImageCodecError where error.code == .badImageData {
                print("not an image:", error.message)
                return nil
            }
        }
        print(try thumbnail(ofUpload: Data("GIF89a".utf8)) == nil)
        // README: end
        return printed
    }
}
