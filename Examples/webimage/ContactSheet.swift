import WebImage

/// The geometry of the demo's contact sheet: a title bar, then a grid of cells, each an image area
/// above two label lines.
struct ContactSheetLayout: Equatable {
    static let cellWidth = 160
    static let imageHeight = 120
    static let labelHeight = 22
    static let gap = 8
    static let margin = 12
    static let titleHeight = 20

    let columns: Int
    let rows: Int

    /// The grid for `count` cells, at most `maximumColumns` wide.
    init(count: Int, maximumColumns: Int = 6) {
        columns = max(1, min(maximumColumns, count))
        rows = max(1, (count + columns - 1) / columns)
    }

    var width: Int { 2 * Self.margin + columns * Self.cellWidth + (columns - 1) * Self.gap }
    var height: Int {
        2 * Self.margin + Self.titleHeight + rows * (Self.imageHeight + Self.labelHeight) + (rows - 1) * Self.gap
    }

    /// Top-left corner of cell `index` (row-major).
    func origin(of index: Int) -> (x: Int, y: Int) {
        let column = index % columns
        let row = index / columns
        return (
            Self.margin + column * (Self.cellWidth + Self.gap),
            Self.margin + Self.titleHeight + row * (Self.imageHeight + Self.labelHeight + Self.gap)
        )
    }
}

/// One cell of the sheet: an image (or an error box) and up to two label lines.
struct ContactSheetCell {
    var image: Image?
    var lines: [String]
    var isError: Bool
}

/// An RGBA8 drawing surface with just what the contact sheet needs.
struct Canvas {
    typealias Color = (r: UInt8, g: UInt8, b: UInt8)

    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]

    init(width: Int, height: Int, background: Color) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 255, count: width * height * 4)
        fill(x: 0, y: 0, width: width, height: height, background)
    }

    /// The canvas as a frame for `PNGEncoder`.
    var frame: ImageFrame { ImageFrame(width: width, height: height, bytesPerRow: width * 4, pixels: pixels) }

    /// Fills a rectangle (clipped to the canvas) with an opaque color.
    mutating func fill(x: Int, y: Int, width w: Int, height h: Int, _ color: Color) {
        for row in max(0, y)..<min(height, y + h) {
            for column in max(0, x)..<min(width, x + w) { set(column, row, color) }
        }
    }

    /// Draws `text` with its top-left at (x, y), clipped at `maxWidth` pixels.
    mutating func draw(_ text: String, x: Int, y: Int, scale: Int = 1, maxWidth: Int, _ color: Color) {
        var penX = x
        for character in text {
            if penX + BitmapFont.glyphWidth * scale > x + maxWidth { break }
            for (rowIndex, bits) in BitmapFont.glyph(character).enumerated() {
                for column in 0..<BitmapFont.glyphWidth where bits & (0b10000 >> UInt8(column)) != 0 {
                    fill(x: penX + column * scale, y: y + rowIndex * scale, width: scale, height: scale, color)
                }
            }
            penX += BitmapFont.advance * scale
        }
    }

    /// Draws `image`'s first frame scaled to fit the box (never enlarged past 4×), centred, each output
    /// pixel the average of the source pixels it covers, composited over a checkerboard so alpha shows.
    mutating func draw(_ image: Image, inBoxX boxX: Int, y boxY: Int, width boxWidth: Int, height boxHeight: Int) {
        guard let frame = image.frames.first, frame.width > 0, frame.height > 0 else { return }
        let scale = min(Double(boxWidth) / Double(frame.width), Double(boxHeight) / Double(frame.height), 4)
        let outWidth = max(1, Int(Double(frame.width) * scale))
        let outHeight = max(1, Int(Double(frame.height) * scale))
        let originX = boxX + (boxWidth - outWidth) / 2
        let originY = boxY + (boxHeight - outHeight) / 2
        for outY in 0..<outHeight {
            let sourceTop = outY * frame.height / outHeight
            let sourceBottom = max(sourceTop + 1, (outY + 1) * frame.height / outHeight)
            for outX in 0..<outWidth {
                let sourceLeft = outX * frame.width / outWidth
                let sourceRight = max(sourceLeft + 1, (outX + 1) * frame.width / outWidth)
                var sums = (0, 0, 0, 0)
                for sy in sourceTop..<sourceBottom {
                    var offset = sy * frame.bytesPerRow + sourceLeft * 4
                    for _ in sourceLeft..<sourceRight {
                        let alpha = Int(frame.pixels[offset + 3])
                        sums.0 += Int(frame.pixels[offset]) * alpha
                        sums.1 += Int(frame.pixels[offset + 1]) * alpha
                        sums.2 += Int(frame.pixels[offset + 2]) * alpha
                        sums.3 += alpha
                        offset += 4
                    }
                }
                let count = (sourceBottom - sourceTop) * (sourceRight - sourceLeft)
                let checker: UInt8 = ((outX / 8) + (outY / 8)) % 2 == 0 ? 200 : 150
                let alpha = Double(sums.3) / Double(count * 255)
                func channel(_ sum: Int) -> UInt8 {
                    let color = sums.3 > 0 ? Double(sum) / Double(sums.3) : 0
                    return UInt8(max(0, min(255, (color * alpha + Double(checker) * (1 - alpha)).rounded())))
                }
                set(originX + outX, originY + outY, (channel(sums.0), channel(sums.1), channel(sums.2)))
            }
        }
    }

    private mutating func set(_ x: Int, _ y: Int, _ color: Color) {
        guard x >= 0, y >= 0, x < width, y < height else { return }
        let offset = (y * width + x) * 4
        pixels[offset] = color.r
        pixels[offset + 1] = color.g
        pixels[offset + 2] = color.b
        pixels[offset + 3] = 255
    }
}

/// Renders the labelled grid of decoded images the demo writes to `contact-sheet.png`.
enum ContactSheet {
    /// Draws the title and one cell per entry, row-major, on a grid sized for `cells.count`.
    static func render(title: String, cells: [ContactSheetCell]) -> (layout: ContactSheetLayout, canvas: Canvas) {
        let layout = ContactSheetLayout(count: cells.count)
        var canvas = Canvas(width: layout.width, height: layout.height, background: (34, 36, 40))
        canvas.draw(
            title, x: ContactSheetLayout.margin, y: ContactSheetLayout.margin, scale: 2,
            maxWidth: layout.width - 2 * ContactSheetLayout.margin, (235, 235, 235))
        for (index, cell) in cells.enumerated() {
            let (x, y) = layout.origin(of: index)
            let w = ContactSheetLayout.cellWidth
            let h = ContactSheetLayout.imageHeight
            canvas.fill(x: x, y: y, width: w, height: h, cell.isError ? (110, 28, 28) : (52, 55, 60))
            if let image = cell.image {
                canvas.draw(image, inBoxX: x + 2, y: y + 2, width: w - 4, height: h - 4)
            } else if cell.isError {
                let text = "ERROR"
                canvas.draw(
                    text, x: x + (w - BitmapFont.width(of: text, scale: 2)) / 2, y: y + h / 2 - 7, scale: 2,
                    maxWidth: w, (255, 220, 220))
            }
            for (line, text) in cell.lines.prefix(2).enumerated() {
                canvas.draw(
                    text, x: x + 1, y: y + h + 3 + line * 10, maxWidth: w - 2,
                    line == 0 ? (235, 235, 235) : (cell.isError ? (255, 140, 140) : (150, 200, 255)))
            }
        }
        return (layout, canvas)
    }
}
