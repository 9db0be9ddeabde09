import Foundation
import WebImageCodecs

/// The proxy's encoder for one request: the format of its `FormatChoice`, at the quality the options give
/// that format (`quality`, else `format_quality`, else the format's default, imgproxy's order), encoded again
/// at lower quality while a `max_bytes` limit is passed.
///
/// imgproxy's `max_bytes` steps (`processing/processing.go`, `saveImageToFitBytes`): after each encode over
/// the limit, the quality is multiplied by 0.25 when the result is more than 3 times the limit, by 0.5 when
/// more than 1.5 times, else by 0.75; it stops once the result fits or the quality is 10 or less, and that
/// last result is sent even when it is still too large. PNG and GIF have no quality: their result is sent
/// as it is.
struct OutputEncoder: ImageEncoding {
    var choice: FormatChoice
    /// `quality`: nil for none.
    var quality: Int?
    var formatQuality: [ProxyOutputFormat: Int] = [:]
    /// `max_bytes`: 0 for no limit.
    var maximumBytes = 0
    /// Handed to every encode; not part of `key`.
    var stopCheck: EncodeStopCheck?

    init(choice: FormatChoice, options: ProcessingOptions, stopCheck: EncodeStopCheck? = nil) {
        self.choice = choice
        self.quality = options.quality
        self.formatQuality = options.formatQuality
        self.maximumBytes = options.maximumBytes
        self.stopCheck = stopCheck
    }

    var format: ImageFormat {
        switch choice {
        case .explicit(let format), .negotiated(let format): format.imageFormat
        case .jpegOrPNG: .jpeg
        }
    }

    var key: String {
        let qualities = ProxyOutputFormat.allCases.map { "\($0.rawValue)=\(quality(for: $0))" }
        return "proxy-output;\(choice.tag);q=\(qualities.joined(separator: ","));mb=\(maximumBytes)"
    }

    /// The quality `format` is encoded at first.
    func quality(for format: ProxyOutputFormat) -> Int {
        quality ?? formatQuality[format] ?? (format == .avif ? 60 : 80)
    }

    func encode(_ image: Image) throws -> Data {
        let target: ProxyOutputFormat
        switch choice {
        case .explicit(let format), .negotiated(let format): target = format
        case .jpegOrPNG: target = image.hasAlpha ? .png : .jpeg
        }
        var current = quality(for: target)
        while true {
            let data = try FormatChoice.encoder(target, quality: current, stopCheck: stopCheck).encode(image)
            guard maximumBytes > 0, target != .png, target != .gif, data.count > maximumBytes, current > 10 else {
                return data
            }
            let ratio = Double(data.count) / Double(maximumBytes)
            let factor = ratio > 3 ? 0.25 : ratio > 1.5 ? 0.5 : 0.75
            // At least 1, the encoders' lowest; the loop ends at the next turn, as quality is then 10 or less.
            current = max(1, Int(Double(current) * factor))
        }
    }
}
