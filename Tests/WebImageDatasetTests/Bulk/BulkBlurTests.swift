import Foundation
import Testing
import WebImage

@testable import WebImageDataset

/// `--bbox-col`: the boxes a row names, read from each input format, and their blur.
@Suite("Bulk box blur")
struct BulkBlurTests {
    /// A `side`×`side` opaque frame of `cell`-pixel black and white squares.
    static func checkerboard(_ side: Int, cell: Int) -> ImageFrame {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(side * side * 4)
        for y in 0..<side {
            for x in 0..<side {
                let value: UInt8 = (x / cell + y / cell) % 2 == 0 ? 240 : 10
                pixels += [value, value, value, 255]
            }
        }
        return ImageFrame(width: side, height: side, bytesPerRow: side * 4, pixels: pixels)
    }

    /// The mean absolute difference between horizontal neighbours of the red channel in the rectangle
    /// `x0..<x1`, `y0..<y1`: the detail there.
    static func detail(_ frame: ImageFrame, _ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> Double {
        var total = 0.0
        for y in y0..<y1 {
            for x in x0..<(x1 - 1) {
                let here = Int(frame.pixels[y * frame.bytesPerRow + x * 4])
                let next = Int(frame.pixels[y * frame.bytesPerRow + (x + 1) * 4])
                total += Double(abs(here - next))
            }
        }
        return total / Double((y1 - y0) * (x1 - x0 - 1))
    }

    @Test("the box loses its detail; pixels beyond the grown box and the kernel keep their exact values")
    func boxLosesDetailOutsideKeepsIt() {
        let frame = Self.checkerboard(200, cell: 2)
        let blurred = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: 0.3, y0: 0.3, x1: 0.6, y1: 0.6)])
        // The box is 60…120; grown by 6 (a tenth of 60) and blurred with 13 taps, nothing changes beyond
        // 54 − 6 − 6 = 42 and 126 + 6 + 6 = 138.
        let before = Self.detail(frame, 60, 60, 120, 120)
        let after = Self.detail(blurred, 60, 60, 120, 120)
        #expect(before > 100)
        #expect(after < before * 0.05, "\(after) of \(before)")
        for y in 0..<200 {
            for x in 0..<200 where !(42..<138).contains(x) || !(42..<138).contains(y) {
                let index = y * frame.bytesPerRow + x * 4
                if frame.pixels[index..<(index + 4)] != blurred.pixels[index..<(index + 4)] {
                    Issue.record("pixel (\(x), \(y)) changed outside the blurred region")
                    return
                }
            }
        }
        // The mask's blurred edge mixes sharp and blurred: some detail stays just outside the grown box.
        #expect(Self.detail(blurred, 40, 90, 52, 91) > 20)
    }

    @Test("a tall image is blurred in bands that join without a seam")
    func bandsJoinSeamlessly() {
        // 40×400 with a box over most of it: several 64-row bands. Each column of a horizontal-stripe image
        // blurs alike, and rows far from the box's ends come out as the same rows of a vertical ramp.
        var pixels: [UInt8] = []
        for y in 0..<400 { for _ in 0..<40 { pixels += [UInt8((y / 3) % 2 == 0 ? 200 : 40), 0, 0, 255] } }
        let frame = ImageFrame(width: 40, height: 400, bytesPerRow: 160, pixels: pixels)
        let blurred = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: 0, y0: 0.05, x1: 1, y1: 0.95)])
        // Rows 6 apart hold the same stripe phase: deep inside the box they must match, across band seams.
        for y in stride(from: 100, to: 290, by: 6) {
            #expect(abs(Int(blurred.pixels[y * 160 + 80]) - Int(blurred.pixels[(y + 6) * 160 + 80])) <= 1, "row \(y)")
        }
        #expect(abs(Int(blurred.pixels[150 * 160 + 80]) - 120) < 20)
    }

    @Test("the blur grows with the largest box: a small box keeps coarse detail a large box removes")
    func strengthScalesWithTheBox() {
        #expect(BoundingBoxBlur.gaussianKernel(side: 20).count == 5)
        #expect(BoundingBoxBlur.gaussianKernel(side: 200).count == 41)
        #expect(BoundingBoxBlur.gaussianKernel(side: 0).count == 3)
        let kernel = BoundingBoxBlur.gaussianKernel(side: 100)
        #expect(abs(kernel.reduce(0, +) - 1) < 1e-5 && kernel.first! < kernel[kernel.count / 2])
        let frame = Self.checkerboard(300, cell: 8)
        let small = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: 0.4, y0: 0.4, x1: 0.5, y1: 0.5)])  // 30 px
        let large = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: 0.1, y0: 0.1, x1: 0.9, y1: 0.9)])  // 240 px
        let original = Self.detail(frame, 125, 125, 145, 145)
        #expect(Self.detail(small, 125, 125, 145, 145) > original * 0.2)
        #expect(Self.detail(large, 125, 125, 145, 145) < original * 0.02)
    }

    @Test("OpenCV's reflect-101 border; no boxes or a reversed one change nothing; wild boxes are held")
    func edges() {
        #expect((-3..<8).map { BoundingBoxBlur.reflect($0, 5) } == [3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1])
        #expect(BoundingBoxBlur.reflect(-7, 3) == 1 && BoundingBoxBlur.reflect(4, 1) == 0)
        let frame = Self.checkerboard(20, cell: 1)
        #expect(BoundingBoxBlur.blur(frame, boxes: []).pixels == frame.pixels)
        #expect(
            BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: 0.6, y0: 0.5, x1: 0.5, y1: 0.9)]).pixels == frame.pixels)
        // Coordinates far outside the image neither trap nor make a kernel larger than the image's.
        let far = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: -1e300, y0: 0, x1: 1e300, y1: 1)])
        #expect(far.pixels != frame.pixels && far.pixels.count == frame.pixels.count)
        // A box over the whole image, larger than it, blurs without reading outside it.
        let whole = BoundingBoxBlur.blur(frame, boxes: [BlurBox(x0: -1, y0: -1, x1: 2, y1: 2)])
        #expect(Self.detail(whole, 2, 2, 17, 17) < Self.detail(frame, 2, 2, 17, 17) * 0.2)
    }

    @Test("the transformer blurs after scaling and before the crop, and blurs an image it does not resize")
    func transformerOrder() throws {
        let frame = Self.checkerboard(200, cell: 2)
        let image = Image(format: .png, width: 200, height: 200, frames: [frame])
        let box = BlurBox(x0: 0, y0: 0, x1: 0.5, y1: 1)
        let cropped = try BulkImageTransformer(resize: BulkResize(mode: .centerCrop, size: 100), boxes: [box])
            .transform(Image(format: .png, width: 400, height: 200, frames: [Self.checkerboard(400, cell: 4)]))
        // 400×200 → 200×100, boxes on that (the left half), then the centre 100×100: its left half blurred.
        let croppedFrame = try #require(cropped.frames.first)
        #expect(cropped.width == 100 && cropped.height == 100)
        #expect(Self.detail(croppedFrame, 5, 40, 40, 60) < Self.detail(croppedFrame, 60, 40, 95, 60) * 0.3)
        let unresized = try BulkImageTransformer(
            resize: BulkResize(mode: .keepRatio, size: 300, onlyIfBigger: true), boxes: [box]
        ).transform(image)
        let unresizedFrame = try #require(unresized.frames.first)
        // The box is 100×200: grown by 20 and blurred with 41 taps, columns past 140 keep their pixels.
        #expect(unresized.width == 200)
        #expect(Self.detail(unresizedFrame, 10, 50, 80, 150) < Self.detail(frame, 10, 50, 80, 150) * 0.05)
        #expect(Self.detail(unresizedFrame, 150, 50, 195, 150) == Self.detail(frame, 150, 50, 195, 150))
        #expect(BulkImageTransformer(resize: nil, boxes: [box]).key != BulkImageTransformer(resize: nil).key)
    }

    @Test("boxes from JSON text, JSON arrays and Parquet lists; null and empty are none; the rest are errors")
    func parsing() throws {
        let expected = [BlurBox(x0: 0.1, y0: 0.2, x1: 0.3, y1: 0.4), BlurBox(x0: 0, y0: 0, x1: 1, y1: 1)]
        #expect(try BlurBox.boxes(in: .text("[[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]]")) == expected)
        #expect(try BlurBox.boxes(in: .json([[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]] as [Any])) == expected)
        let parquet = ParquetValue.list([
            .list([.double(0.1), .double(0.2), .double(0.3), .double(0.4)]),
            .list([.int64(0), .int32(0), .float(1), .double(1)]),
        ])
        #expect(try BlurBox.boxes(in: .parquet(parquet)) == expected)
        let text = "[[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]]"
        #expect(try BlurBox.boxes(in: .json(text)) == expected)
        #expect(try BlurBox.boxes(in: .parquet(.string(text))) == expected)
        for none: BlurBox.BoxCell in [.null, .text(""), .text(" null "), .text("[]"), .json(NSNull()), .parquet(.null)]
        {
            #expect(try BlurBox.boxes(in: none).isEmpty)
        }
        let bad: [BlurBox.BoxCell] = [
            .text("[[0.1, 0.2, 0.3]]"), .text("[0.1, 0.2, 0.3, 0.4]"), .text("faces"), .text("[[\"a\", 0, 1, 1]]"),
            .json("x"), .parquet(.list([.list([.string("a"), .double(0), .double(1), .double(1)])])),
            .parquet(.double(1)),
        ]
        for cell in bad {
            #expect(throws: BlurBox.BoxParseError.self, "\(cell)") { try BlurBox.boxes(in: cell) }
        }
    }

    @Test("each reader gives the rows' boxes: CSV and TSV JSON text, JSON Lines arrays, a Parquet list of lists")
    func readers() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-blur-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let columns = BulkColumns(boxes: "faces")
        let box = [BlurBox(x0: 0.1, y0: 0.2, x1: 0.3, y1: 0.4)]
        func rows(_ name: String, _ text: String) throws -> [BulkRow] {
            let url = folder.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return try BulkPartsTests.rows(url, columns)
        }
        let csv = try rows("a.csv", "url,faces\nhttp://a/1.jpg,\"[[0.1,0.2,0.3,0.4]]\"\nhttp://a/2.jpg,\n")
        #expect(csv.map(\.boxes) == [box, []])
        let tsv = try rows("a.tsv", "url\tfaces\nhttp://a/1.jpg\t[[0.1,0.2,0.3,0.4]]\n")
        #expect(tsv.map(\.boxes) == [box])
        let jsonl = try rows(
            "a.jsonl", "{\"url\":\"http://a/1.jpg\",\"faces\":[[0.1,0.2,0.3,0.4]]}\n{\"url\":\"http://a/2.jpg\"}\n")
        #expect(jsonl.map(\.boxes) == [box, []])
        #expect(throws: BulkInputError.self) {
            _ = try rows("b.csv", "url,faces\nhttp://a/1.jpg,\"[[0.1,0.2]]\"\n")
        }
        #expect(throws: BulkInputError.self) { _ = try rows("c.csv", "url,other\nhttp://a/1.jpg,1\n") }

        let parquet = folder.appendingPathComponent("a.parquet")
        let writer = try ParquetWriter(
            path: parquet.path,
            schema: ParquetSchema(columns: [
                ParquetColumn(name: "url", type: .string, isNullable: false),
                ParquetColumn(
                    name: "faces",
                    type: .list(element: .list(element: .double, elementNullable: false), elementNullable: false),
                    isNullable: true),
            ]))
        try writer.writeRowGroup([
            [.string("http://a/1.jpg"), .string("http://a/2.jpg"), .string("http://a/3.jpg")],
            [.list([.list([.double(0.1), .double(0.2), .double(0.3), .double(0.4)])]), .null, .list([])],
        ])
        try writer.close()
        #expect(try BulkPartsTests.rows(parquet, columns).map(\.boxes) == [box, [], []])
    }
}
