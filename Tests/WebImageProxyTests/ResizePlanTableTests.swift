import Testing
import WebImage
import WebImageProxy

/// `ResizePlan`'s result sizes against imgproxy's own expectations for its 200×100 `geometry.png`.
///
/// The `fit`, `fill` and `fill-down` tables (each plain, with `enlarge`, with `extend` and with
/// `extend_aspect_ratio`) and the result-limit table are transcribed from imgproxy's
/// `processing/processing_test.go` (`TestResizeToFit…`, `TestResizeToFill…`, `TestResizeToFillDown…`,
/// `TestResultSizeLimit`), the padding table from `processing/padding_test.go`. imgproxy has no tables for
/// `force` and `auto`: theirs below were worked out by hand from `calcScale`/`calcSizes` in
/// `processing/prepare.go` for the same requests.
@Suite("serve: the plan's sizes are imgproxy's")
struct ResizePlanTableTests {
    static let geometry = PixelSize(width: 200, height: 100)

    /// One row: the request and the size imgproxy gives.
    struct Row: CustomStringConvertible, Sendable {
        var width: Int
        var height: Int
        var expected: (width: Int, height: Int)
        var description: String { "\(width)x\(height) → \(expected.width)x\(expected.height)" }
    }

    static func rows(_ list: [(Int, Int, Int, Int)]) -> [Row] {
        list.map { Row(width: $0.0, height: $0.1, expected: ($0.2, $0.3)) }
    }

    /// The result size for `options` (URL option segments) on `source`.
    static func size(_ options: String, source: PixelSize = geometry, limit: Int? = nil) throws -> PixelSize {
        let url = try ProxyURL(path: "/s/\(options)/plain/http://h/a.png")
        return ResizePlan.make(
            options: url.options, source: source, maximumDimension: limit ?? ProcessingOptions.largestScaledSide
        ).size
    }

    static func check(_ type: String, _ flags: String, _ rows: [Row]) throws {
        for row in rows {
            let options = "rs:\(type):\(row.width):\(row.height)" + flags
            let size = try size(options)
            #expect(
                size.width == row.expected.width && size.height == row.expected.height,
                "\(options): \(size), imgproxy \(row.expected)")
        }
    }

    // MARK: fit (processing_test.go)

    @Test("fit") func fit() throws {
        try Self.check(
            "fit", "",
            Self.rows([
                (50, 50, 50, 25), (50, 20, 40, 20), (20, 50, 20, 10), (300, 300, 200, 100), (300, 50, 100, 50),
                (100, 300, 100, 50), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    @Test("fit with enlarge") func fitEnlarge() throws {
        try Self.check(
            "fit", "/el:1",
            Self.rows([
                (50, 50, 50, 25), (50, 20, 40, 20), (20, 50, 20, 10), (300, 300, 300, 150), (300, 125, 250, 125),
                (250, 300, 250, 125), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 400, 200), (300, 0, 300, 150),
            ]))
    }

    @Test("fit with extend") func fitExtend() throws {
        try Self.check(
            "fit", "/ex:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 200), (300, 0, 300, 100),
            ]))
    }

    @Test("fit with extend_aspect_ratio") func fitExtendAspectRatio() throws {
        try Self.check(
            "fit", "/exar:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 200, 200), (300, 125, 240, 100),
                (250, 500, 200, 400), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    // MARK: fill (processing_test.go)

    @Test("fill") func fill() throws {
        try Self.check(
            "fill", "",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 200, 100), (300, 50, 200, 50),
                (100, 300, 100, 100), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    @Test("fill with enlarge") func fillEnlarge() throws {
        try Self.check(
            "fill", "/el:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 400, 200), (300, 0, 300, 150),
            ]))
    }

    @Test("fill with extend") func fillExtend() throws {
        try Self.check(
            "fill", "/ex:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (300, 50, 300, 50), (100, 300, 100, 300), (0, 50, 100, 50), (50, 0, 50, 25),
                (0, 200, 200, 200), (300, 0, 300, 100),
            ]))
    }

    @Test("fill with extend_aspect_ratio") func fillExtendAspectRatio() throws {
        try Self.check(
            "fill", "/exar:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 200, 200), (300, 125, 240, 100),
                (250, 500, 200, 400), (300, 50, 300, 50), (100, 300, 100, 300), (0, 50, 100, 50), (50, 0, 50, 25),
                (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    // MARK: fill-down (processing_test.go)

    @Test("fill-down") func fillDown() throws {
        try Self.check(
            "fill-down", "",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 100, 100), (300, 125, 200, 83),
                (250, 300, 83, 100), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    @Test("fill-down with enlarge") func fillDownEnlarge() throws {
        try Self.check(
            "fill-down", "/el:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 400, 200), (300, 0, 300, 150),
            ]))
    }

    @Test("fill-down with extend") func fillDownExtend() throws {
        try Self.check(
            "fill-down", "/ex:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (300, 50, 300, 50), (100, 300, 100, 300), (0, 50, 100, 50), (50, 0, 50, 25),
                (0, 200, 200, 200), (300, 0, 300, 100),
            ]))
    }

    @Test("fill-down with extend_aspect_ratio") func fillDownExtendAspectRatio() throws {
        try Self.check(
            "fill-down", "/exar:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 100, 100), (300, 125, 200, 83),
                (250, 300, 83, 100), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    // MARK: force and auto (worked out from prepare.go)

    @Test("force, with enlarge, extend and extend_aspect_ratio") func force() throws {
        try Self.check(
            "force", "",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 100, 100), (300, 50, 200, 33),
                (100, 300, 33, 100), (0, 50, 200, 50), (50, 0, 50, 100), (0, 200, 100, 100), (300, 0, 200, 67),
            ]))
        try Self.check(
            "force", "/el:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 200, 50), (50, 0, 50, 100), (0, 200, 200, 200), (300, 0, 300, 100),
            ]))
        try Self.check(
            "force", "/ex:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 200, 50), (50, 0, 50, 100), (0, 200, 100, 200), (300, 0, 300, 67),
            ]))
        try Self.check(
            "force", "/exar:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 100, 100), (300, 125, 200, 83),
                (250, 500, 50, 100), (0, 50, 200, 50), (50, 0, 50, 100), (0, 200, 100, 100), (300, 0, 200, 67),
            ]))
    }

    @Test("auto, with enlarge, extend and extend_aspect_ratio") func auto() throws {
        try Self.check(
            "auto", "",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 10), (300, 300, 200, 100), (300, 50, 200, 50),
                (100, 300, 100, 50), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
        try Self.check(
            "auto", "/el:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 10), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 125), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 400, 200), (300, 0, 300, 150),
            ]))
        try Self.check(
            "auto", "/ex:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 300, 300), (300, 125, 300, 125),
                (250, 300, 250, 300), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 200), (300, 0, 300, 100),
            ]))
        try Self.check(
            "auto", "/exar:1",
            Self.rows([
                (50, 50, 50, 50), (50, 20, 50, 20), (20, 50, 20, 50), (300, 300, 200, 200), (300, 125, 240, 100),
                (250, 500, 200, 400), (0, 50, 100, 50), (50, 0, 50, 25), (0, 200, 200, 100), (300, 0, 200, 100),
            ]))
    }

    // MARK: Result limit and padding (processing_test.go, padding_test.go)

    @Test(
        "max_result_dimension bounds the canvas, extension and padding included",
        arguments: [
            (1000, "rs:fit:100:100", 100, 50), (50, "rs:fit:100:100", 50, 25), (50, "rs:fit:0:0", 50, 25),
            (100, "rs:fit:0:100", 100, 50), (50, "rs:fit:150:0", 50, 25), (100, "rs:fit:1000:1000", 100, 50),
            (100, "rs:fit:1000:1000/el:1", 100, 50), (100, "rs:fit:1000:2000/ex:1", 50, 100),
            (100, "rs:fit:1000:2000/exar:1", 50, 100), (100, "rs:fit:100:150/rot:90", 50, 100),
            (100, "rs:fit:0:0/rot:90", 50, 100), (200, "rs:fit:100:100/pd:100:200:300:400", 200, 129),
            (1000, "rs:fill:100:100", 100, 100), (50, "rs:fill:100:100", 50, 50), (50, "rs:fill:1000:50", 50, 13),
            (50, "rs:fill:100:1000", 50, 50), (50, "rs:fill:0:0", 50, 25), (100, "rs:fill:0:100", 100, 50),
            (50, "rs:fill:150:0", 50, 25), (100, "rs:fill:1000:1000", 100, 50),
            (100, "rs:fill:1000:1000/el:1", 100, 100), (100, "rs:fill:1000:2000/ex:1", 50, 100),
            (100, "rs:fill:1000:2000/exar:1", 50, 100), (100, "rs:fill:100:150/rot:90", 67, 100),
            (100, "rs:fill:0:0/rot:90", 50, 100), (200, "rs:fill:100:100/pd:100:200:300:400", 200, 144),
            (1000, "rs:fill-down:100:100", 100, 100), (50, "rs:fill-down:100:100", 50, 50),
            (50, "rs:fill-down:1000:50", 50, 3), (50, "rs:fill-down:100:1000", 5, 50),
            (50, "rs:fill-down:0:0", 50, 25), (100, "rs:fill-down:0:100", 100, 50),
            (50, "rs:fill-down:150:0", 50, 25), (100, "rs:fill-down:1000:1000", 100, 100),
            (100, "rs:fill-down:1000:1000/el:1", 100, 100), (100, "rs:fill-down:1000:2000/ex:1", 50, 100),
            (100, "rs:fill-down:1000:2000/exar:1", 50, 100), (100, "rs:fill-down:1000:1500/rot:90", 67, 100),
            (100, "rs:fill-down:0:0/rot:90", 50, 100), (200, "rs:fill-down:100:100/pd:100:200:300:400", 200, 144),
            (200, "rs:fill-down:1000:1000/pd:100:200:300:400", 200, 144),
        ])
    func resultLimit(limit: Int, options: String, width: Int, height: Int) throws {
        let size = try Self.size(options, limit: limit)
        #expect(size.width == width && size.height == height, "\(options) within \(limit): \(size)")
    }

    @Test(
        "padding scales with dpr (padding_test.go)",
        arguments: [("0.5", 120, 80), ("1", 240, 160), ("2", 480, 320)])
    func padding(dpr: String, width: Int, height: Int) throws {
        let size = try Self.size("dpr:\(dpr)/pd:20:30:40:10/el:1")
        #expect(size.width == width && size.height == height, "dpr \(dpr): \(size)")
    }

    @Test("a size held at 2^30 still scales down to the limit as a whole, not cut at it")
    func saturatedSides() throws {
        let url = try ProxyURL(path: "/s/rs:fill:\(Int.max):\(Int.max):1/dpr:8/plain/http://h/a.png")
        let plan = ResizePlan.make(
            options: url.options, source: PixelSize(width: 600, height: 400), maximumDimension: 512)
        #expect(plan.size == PixelSize(width: 512, height: 512))
        #expect(plan.scaled == PixelSize(width: 768, height: 512), "the whole height kept: \(plan)")
        #expect(plan.kept == PixelRect(x: 128, y: 0, width: 512, height: 512), "cropped around the centre")
    }

    // MARK: The issue's cases

    @Test("the off-by-one sizes of the issue: w:300 on 640×427, rs:fit:20:50 on 200×100")
    func issueSizes() throws {
        let photo = try Self.size("w:300", source: PixelSize(width: 640, height: 427))
        #expect(photo == PixelSize(width: 300, height: 200))
        #expect(try Self.size("rs:fit:20:50") == PixelSize(width: 20, height: 10))
        #expect(try Self.size("rs:fit:300:300:0:1") == PixelSize(width: 300, height: 300), "rs's fifth argument")
    }
}
