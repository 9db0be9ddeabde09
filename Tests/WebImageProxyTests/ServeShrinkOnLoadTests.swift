import Foundation
import TestSupport
import Testing
import WebImage

@testable import WebImageProxy

/// The proxy decodes no more of a source than its result needs (libjpeg's DCT scaling for JPEG), and the
/// result's size still follows the source's own size.
@Suite("serve: shrink-on-load")
struct ServeShrinkOnLoadTests {
    static func options(_ type: ResizeType, _ width: Int, _ height: Int, dpr: Double = 1) -> ProcessingOptions {
        var options = ProcessingOptions()
        options.resizeType = type
        options.width = width
        options.height = height
        options.dpr = dpr
        return options
    }

    @Test("fit asks for a fitting decode, the other types for a covering one, one side for that side alone")
    func minimumDecodeSizes() {
        #expect(
            ProxyTransformer(options: Self.options(.fit, 300, 200)).minimumDecodeSize
                == .init(size: .init(width: 300, height: 200), coverage: .fit))
        for type in [ResizeType.fill, .fillDown, .force, .auto] {
            #expect(ProxyTransformer(options: Self.options(type, 256, 256)).minimumDecodeSize?.coverage == .fill)
        }
        let wide = ProxyTransformer(options: Self.options(.fill, 150, 0)).minimumDecodeSize
        #expect(wide?.coverage == .fit && wide?.size.width == 150 && (wide?.size.height ?? 0) > 100_000)
        #expect(ProxyTransformer(options: Self.options(.fit, 100, 100, dpr: 2)).minimumDecodeSize?.size.width == 200)
        #expect(ProxyTransformer(options: ProcessingOptions()).minimumDecodeSize == nil)
    }

    @Test("a 600×400 JPEG is decoded smaller for 150×150 fill, and the result is what a full decode gives")
    func jpegShrinksOnLoad() throws {
        let data = try Data(contentsOf: Fixtures.corpusImages.appendingPathComponent("coffee-progressive.jpg"))
        for (type, width, height, expected) in [
            (ResizeType.fill, 150, 150, PixelSize(width: 150, height: 150)),
            (.fit, 200, 200, PixelSize(width: 200, height: 133)),
            (.force, 120, 300, PixelSize(width: 120, height: 300)),
            (.fill, 150, 0, PixelSize(width: 150, height: 100)),
        ] {
            let transformer = ProxyTransformer(options: Self.options(type, width, height))
            var decoding = ImageDecodingOptions()
            decoding.minimumDecodeSize = transformer.minimumDecodeSize
            let decoded = try ImageDecoderRegistry.shared.decode(data, options: decoding)
            #expect(decoded.width < 600 || type == .force, "\(type) \(width)×\(height) decoded at \(decoded.width)")
            #expect(decoded.originalWidth == 600 && decoded.originalHeight == 400)
            let result = try transformer.transform(decoded)
            let full = try transformer.transform(try ImageDecoderRegistry.shared.decode(data))
            #expect(PixelSize(width: result.width, height: result.height) == expected, "\(type)")
            #expect(PixelSize(width: full.width, height: full.height) == expected, "\(type)")
        }
    }
}
