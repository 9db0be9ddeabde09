import Foundation
import TestSupport
import Testing
import WebImage
import WebImageProxy

/// Random and extreme numbers through the URL parser and the resize plan: every URL is either refused with
/// a 400 or parsed, and every parsed one gives a plan within the limits, for any source size. A trap (an
/// overflow, a conversion of a non-finite `Double`) ends the test process, so reaching the end is the check
/// that none happened; the expectations check the answers.
@Suite("serve: numbers fuzz")
struct ProxyNumbersFuzzTests {
    static let extremes = [
        "0", "1", "-1", "2", "8", "9", "100", "101", "\(Int.max)", "\(Int.min)", "\(Int.max - 1)", "\(1 << 30)",
        "\(1 << 31)", "\(1 << 62)", "9223372036854775808", "-9223372036854775809", "nan", "NaN", "inf", "-inf",
        "infinity", "1e300", "-1e300", "1e-300", "-0", "0.0", "0.5", "7.99999", "8.0000001", "", "abc", "0x10",
        "1_000", " 1", "+5",
    ]

    static func value(_ generator: inout SeededGenerator) -> String {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: "\(Int.random(in: Int.min...Int.max, using: &generator))"
        case 1: "\(Double.random(in: -10...10, using: &generator))"
        case 2: "\(Int.random(in: 0...20_000, using: &generator))"
        default: extremes.randomElement(using: &generator) ?? "0"
        }
    }

    static func segment(_ generator: inout SeededGenerator) -> String {
        let names = [
            "rs", "resize", "s", "size", "rt", "w", "width", "h", "height", "mw", "mh", "z", "zoom", "el", "enlarge",
            "ex", "exar", "c", "crop", "pd", "padding", "ar", "rot", "q", "quality", "dpr", "g", "f", "fq", "mb",
            "max_bytes", "sm", "kcr", "scp", "eth", "skp", "raw", "cb", "exp", "expires", "fn", "att", "pr",
        ]
        let formats = ["jpg", "jpeg", "png", "webp", "avif", "gif", "svg", ""]
        let name = names.randomElement(using: &generator) ?? "w"
        let gravities = ["ce", "no", "so", "ea", "we", "noea", "nowe", "soea", "sowe", "fp", "sm", "", "up"]
        func values(_ range: ClosedRange<Int>) -> [String] {
            (0..<Int.random(in: range, using: &generator)).map { _ in value(&generator) }
        }
        func gravity() -> [String] {
            [gravities.randomElement(using: &generator) ?? "ce"] + values(0...3)
        }
        switch name {
        case "rs", "resize":
            let type = ["fit", "fill", "fill-down", "force", "auto", "", "nope"].randomElement(using: &generator) ?? ""
            let arguments = values(0...4) + (Bool.random(using: &generator) ? gravity() : [])
            return ([name, type] + arguments).joined(separator: ":")
        case "s", "size", "pd", "padding", "z", "zoom":
            return ([name] + values(1...5)).joined(separator: ":")
        case "rt":
            return "rt:"
                + (["fit", "fill", "fill-down", "force", "auto", "", "nope"].randomElement(using: &generator) ?? "")
        case "ex", "exar", "g":
            let head = name == "g" ? [] : [value(&generator)]
            return ([name] + head + gravity()).joined(separator: ":")
        case "c", "crop":
            return ([name] + values(1...2) + (Bool.random(using: &generator) ? gravity() : [])).joined(separator: ":")
        case "f":
            return "f:" + (["png", "jpg", "webp", "avif", "gif", ""].randomElement(using: &generator) ?? "")
        case "fq":
            let pairs = (0..<Int.random(in: 0...3, using: &generator)).flatMap { _ in
                [formats.randomElement(using: &generator) ?? "", value(&generator)]
            }
            return (["fq"] + pairs + (Bool.random(using: &generator) ? [value(&generator)] : [])).joined(separator: ":")
        case "skp":
            return
                (["skp"]
                + (0...Int.random(in: 0...3, using: &generator)).map { _ in
                    formats.randomElement(using: &generator) ?? ""
                }).joined(separator: ":")
        case "fn":
            return ([name] + values(1...3)).joined(separator: ":")
        case "pr":
            return
                (["pr"]
                + (0...Int.random(in: 0...2, using: &generator)).map { _ in
                    Self.presetNames.randomElement(using: &generator) ?? ""
                }).joined(separator: ":")
        default:
            return "\(name):\(value(&generator))"
        }
    }

    /// Presets the random paths may name, one naming itself and one a bad number's neighbour; `nope` and the
    /// empty name are not presets.
    static let presetNames = ["small", "loop", "big", "nope", ""]
    static let presets: ProxyPresets =
        (try? ProxyPresets(["small=w:10/mb:100", "loop=pr:loop/pr:small", "big=s:\(Int.max):0"])) ?? ProxyPresets()

    @Test("20,000 random option paths: each is a 400 or a plan within the limit, for extreme source sizes")
    func randomOptions() throws {
        #expect(Self.presets.names == ["big", "loop", "small"], "the presets the paths name exist")
        var generator = SeededGenerator(seed: 0x5EED)  // the same cases on every run
        let sources = [
            PixelSize(width: 1, height: 1), PixelSize(width: 640, height: 427), PixelSize(width: 1, height: 16_800_000),
            PixelSize(width: 16_800_000, height: 1), PixelSize(width: Int(Int32.max), height: Int(Int32.max)),
            PixelSize(width: 1 << 40, height: 3),
        ]
        let limits = [1, 2, 512, 8192, 1 << 30, Int.max]
        var parsed = 0
        var refused = 0
        for _ in 0..<20_000 {
            let segments = (0..<Int.random(in: 1...4, using: &generator)).map { _ in Self.segment(&generator) }
            let path = "/insecure/" + segments.joined(separator: "/") + "/plain/http://example.com/a.jpg"
            let url: ProxyURL
            do {
                url = try ProxyURL(path: path, presets: Self.presets)
            } catch {
                #expect(error.status == 400, "\(path): \(error)")
                refused += 1
                continue
            }
            parsed += 1
            let options = url.options
            #expect((0...ProcessingOptions.largestScaledSide).contains(options.scaledWidth), "\(path)")
            #expect((0...ProcessingOptions.largestScaledSide).contains(options.scaledHeight), "\(path)")
            #expect(options.dpr > 0 && options.dpr <= 8, "\(path)")
            #expect((0...(1 << 40)).contains(options.maximumBytes), "\(path)")
            #expect(options.quality.map { (1...100).contains($0) } ?? true, "\(path)")
            #expect(options.formatQuality.values.allSatisfy { (1...100).contains($0) }, "\(path)")
            _ = options.canonical
            for source in sources {
                for limit in limits {
                    let plan = ResizePlan.make(options: options, source: source, maximumDimension: limit)
                    let bound = min(limit, ProcessingOptions.largestScaledSide)
                    #expect(
                        (1...bound).contains(plan.size.width) && (1...bound).contains(plan.size.height),
                        "\(path) on \(source) within \(limit): \(plan.size)")
                    // What is kept lies in the scaled image, and lands on the canvas.
                    let kept = plan.kept
                    #expect(
                        kept.x >= 0 && kept.y >= 0 && kept.width >= 1 && kept.height >= 1
                            && kept.x + kept.width <= plan.scaled.width && kept.y + kept.height <= plan.scaled.height
                            && plan.origin.x >= 0 && plan.origin.y >= 0
                            && plan.origin.x + kept.width <= plan.size.width
                            && plan.origin.y + kept.height <= plan.size.height,
                        "\(path) on \(source) within \(limit): \(plan)")
                    if let crop = plan.crop {
                        #expect(
                            crop.x >= 0 && crop.y >= 0 && crop.width >= 1 && crop.height >= 1
                                && crop.x + crop.width <= plan.source.width
                                && crop.y + crop.height <= plan.source.height,
                            "\(path) on \(source): \(plan)")
                    }
                }
            }
        }
        // Both outcomes happen, so the loop checked something on each side.
        #expect(parsed > 1000 && refused > 1000, "\(parsed) parsed, \(refused) refused")
    }

    @Test("library users' out-of-range options saturate instead of trapping")
    func outOfRangeOptionValues() {
        var options = ProcessingOptions()
        options.width = Int.max
        options.height = Int.min
        for dpr in [Double.nan, .infinity, -.infinity, 1e300, -1, 0, .leastNonzeroMagnitude, 8] {
            options.dpr = dpr
            #expect((0...ProcessingOptions.largestScaledSide).contains(options.scaledWidth), "\(dpr)")
            #expect((0...ProcessingOptions.largestScaledSide).contains(options.scaledHeight), "\(dpr)")
            #expect(options.scaledHeight == 0 || dpr < 0, "\(dpr): a negative height stays 0 unless dpr flips it")
            options.zoomWidth = dpr
            options.minHeight = Int.max
            options.padding = PaddingOption(top: Int.max, right: Int.min, bottom: 1 << 40, left: -1)
            options.crop = CropOption(width: dpr, height: -dpr, gravity: Gravity(.focusPoint, x: dpr, y: -dpr))
            options.extend = ExtendOption(enabled: true, gravity: Gravity(.east, x: dpr, y: 1e300))
            let plan = ResizePlan.make(
                options: options, source: PixelSize(width: 640, height: 427), maximumDimension: 100)
            #expect(plan.size.width <= 100 && plan.size.height <= 100, "\(dpr): \(plan)")
        }
    }
}
