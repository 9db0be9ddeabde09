import CPixelKernels
import Foundation
import Locking

/// High-quality resampling for the transformers: separable Lanczos-3 on premultiplied alpha.
///
/// Shrinking by more than 2× first averages whole boxes of pixels (an integer factor that leaves between
/// 1× and 2× for the filter), which is what the filter would compute over its wide support anyway, at a
/// fraction of the cost. Every step works on premultiplied values, so fully transparent pixels (whose
/// colour is often black) never bleed into their neighbours: no dark fringes along transparent edges.
/// Enlarging uses the same filter at its natural width.
///
/// Only the pixels of the output `window` are computed (a `fill` thumbnail's centre crop): the horizontal
/// pass makes the window's columns of the input rows the window's rows read, the vertical pass the
/// window's rows, each output value summed in the same order as over the whole image, so the window is
/// exactly that part of the full resize. A frame whose alpha bytes the filter reads are all 255 skips
/// premultiplying (multiplying by 1) and unpremultiplying, and is read from its 8-bit rows without a float
/// copy of the whole frame.
enum LanczosResampler {
    /// `frame` resampled to `size` (at least 1×1); the frame itself when the size already matches.
    static func resize(_ frame: ImageFrame, to size: PixelSize, mayBeOpaque: Bool = true) -> ImageFrame {
        let target = PixelSize(width: max(1, size.width), height: max(1, size.height))
        return resize(
            frame, to: target, window: PixelRect(x: 0, y: 0, width: target.width, height: target.height),
            mayBeOpaque: mayBeOpaque)
    }

    /// The part `window` (inside `0..<size`) of `frame` resampled to `size`: the same pixels as resizing the
    /// whole frame and cropping it, without computing the rest.
    ///
    /// With `mayBeOpaque` (an image without `hasAlpha`), the opaque path is tried first: it checks every
    /// alpha byte it reads and falls back to the premultiplied path at the first that is not 255. Its
    /// colours can differ from the premultiplied path's by one level where a value lands on a rounding
    /// boundary (the alpha there is a sum of weights, not exactly 255).
    ///
    /// On x86-64 processors with AVX2 and FMA the opaque path runs in C (`CPixelKernels`), eight floats at a
    /// time with fused multiply-adds: a value can then differ from the Swift passes' by one level where it
    /// lands on a rounding boundary. `vectorKernels` chooses (tests run both); the window is still exactly
    /// that part of the whole resize, as each value is summed the same way wherever the window is.
    static func resize(
        _ frame: ImageFrame, to size: PixelSize, window: PixelRect, mayBeOpaque: Bool,
        vectorKernels: Bool = LanczosResampler.vectorKernelsAvailable
    ) -> ImageFrame {
        let target = PixelSize(width: max(1, size.width), height: max(1, size.height))
        let window = PixelRect(
            x: min(max(0, window.x), target.width - 1), y: min(max(0, window.y), target.height - 1),
            width: max(1, min(window.width, target.width - max(0, window.x))),
            height: max(1, min(window.height, target.height - max(0, window.y))))
        guard target.width != frame.width || target.height != frame.height else {
            guard window.width != frame.width || window.height != frame.height else { return frame }
            return PixelOps.crop(frame, window)
        }
        if let deep = frame.sixteenBitSamples {
            return SixteenBitResampler.resize(
                deep, width: frame.width, height: frame.height, to: target, window: window, duration: frame.duration)
        }
        let (factorX, factorY) = boxFactors(from: PixelSize(width: frame.width, height: frame.height), to: target)
        let columnRange = window.x..<(window.x + window.width)
        let rowRange = window.y..<(window.y + window.height)
        // An opaque frame the filter reads directly is converted row by row. Otherwise the box reduction
        // (or premultiplying) is made from the 8-bit pixels once: the full-size float plane (16 bytes a
        // pixel) is never made when boxes shrink it.
        var pixels: [UInt8]?
        if mayBeOpaque && factorX == 1 && factorY == 1 {
            let passes = ResamplerPasses(
                source: .opaque(frame),
                columns: FilterTaps.cached(input: frame.width, output: target.width, range: columnRange),
                rows: FilterTaps.cached(input: frame.height, output: target.height, range: rowRange))
            pixels = vectorKernels ? passes.runOpaqueKernels(frame) : passes.run()
        }
        if pixels == nil {
            let plane = PremultipliedPlane(frame, boxX: factorX, boxY: factorY)
            pixels = ResamplerPasses(
                source: .plane(plane),
                columns: FilterTaps.cached(input: plane.width, output: target.width, range: columnRange),
                rows: FilterTaps.cached(input: plane.height, output: target.height, range: rowRange)
            ).run()
        }
        return ImageFrame(
            width: window.width, height: window.height, bytesPerRow: window.width * 4, pixels: pixels ?? [],
            duration: frame.duration)
    }

    /// Whether this processor runs `CPixelKernels` (x86-64 with AVX2 and FMA).
    static let vectorKernelsAvailable = wi_pixel_kernels_available() != 0

    /// The integer box factors taken before filtering: whatever leaves between 1× and 2× for the filter.
    static func boxFactors(from source: PixelSize, to target: PixelSize) -> (x: Int, y: Int) {
        (max(1, source.width / max(1, target.width) / 2), max(1, source.height / max(1, target.height) / 2))
    }

    /// The most bytes `resize` allocates beside the input frame and the output window's pixels, from
    /// `source` to `target` over `window` (the whole target when nil): the box-reduced premultiplied plane
    /// (made for a frame with alpha, when boxes shrink it, and when the opaque path falls back), the
    /// horizontal pass's rows (the window's columns of every input row its vertical taps read) and one
    /// row of sums. The opaque path's one converted row and its ring of filtered rows are smaller than the
    /// plane and the rows it replaces, so this bounds both paths.
    static func workingBytes(from source: PixelSize, to target: PixelSize, window: PixelRect? = nil) -> Int {
        guard source != target, source.width > 0, source.height > 0, target.width > 0, target.height > 0 else {
            return 0
        }
        let window =
            window.map {
                PixelRect(
                    x: min(max(0, $0.x), target.width - 1), y: min(max(0, $0.y), target.height - 1),
                    width: max(1, min($0.width, target.width - max(0, $0.x))),
                    height: max(1, min($0.height, target.height - max(0, $0.y))))
            } ?? PixelRect(x: 0, y: 0, width: target.width, height: target.height)
        let (factorX, factorY) = boxFactors(from: source, to: target)
        let reduced = PixelSize(width: max(1, source.width / factorX), height: max(1, source.height / factorY))
        let rowsRead = FilterTaps.cached(
            input: reduced.height, output: target.height, range: window.y..<(window.y + window.height)
        ).inputSpan.count
        return PixelMemory.sum(
            PixelMemory.bytes(reduced, count: 4),
            PixelMemory.bytes(PixelSize(width: window.width, height: rowsRead), count: 4),
            PixelMemory.bytes(PixelSize(width: window.width, height: 1), count: 4))
    }

    /// Lanczos-3: sinc(x)·sinc(x/3) for |x| < 3.
    static func lanczos3(_ x: Double) -> Double {
        let x = abs(x)
        if x < 1e-9 { return 1 }
        if x >= 3 { return 0 }
        let pix = Double.pi * x
        return 3 * sin(pix) * sin(pix / 3) / (pix * pix)
    }
}

/// For each output position of `range` along one axis: the first input index and its normalised weights
/// (each broadcast to four lanes), flattened so the filter loops read one array. The same size in and
/// out is one weight of 1 per position (the pass then copies).
struct FilterTaps {
    /// The first input index of each output position of the range.
    var starts: [Int] = []
    /// Where each position's weights begin in ``weights``; one more entry than positions.
    var offsets: [Int] = [0]
    var weights: [SIMD4<Float>] = []

    init(input: Int, output: Int, range: Range<Int>) {
        starts.reserveCapacity(range.count)
        offsets.reserveCapacity(range.count + 1)
        guard input != output else {
            for index in range {
                starts.append(index)
                weights.append(SIMD4(repeating: 1))
                offsets.append(weights.count)
            }
            return
        }
        let scale = Double(input) / Double(output)
        let support = 3 * max(1, scale)
        let filterScale = max(1, scale)
        var row: [Double] = []
        for index in range {
            let center = (Double(index) + 0.5) * scale
            let first = max(0, Int((center - support).rounded(.down)))
            let last = min(input - 1, Int((center + support).rounded(.up)))
            row.removeAll(keepingCapacity: true)
            var total = 0.0
            if first <= last {
                for source in first...last {
                    let weight = LanczosResampler.lanczos3((Double(source) + 0.5 - center) / filterScale)
                    row.append(weight)
                    total += weight
                }
            }
            if total == 0 {
                starts.append(min(max(0, Int(center)), input - 1))
                weights.append(SIMD4(repeating: 1))
            } else {
                starts.append(first)
                for weight in row { weights.append(SIMD4(repeating: Float(weight / total))) }
            }
            offsets.append(weights.count)
        }
    }

    /// The taps of `range` from `input` to `output` positions. Every image of one geometry (a bulk run's
    /// photos of one camera, a thumbnail service's) has the same taps: the last few are kept, so their
    /// sines are computed once.
    static func cached(input: Int, output: Int, range: Range<Int>) -> FilterTaps {
        let key = Key(input: input, output: output, range: range)
        if let taps = recent.withLock({ $0[key] }) { return taps }
        let taps = FilterTaps(input: input, output: output, range: range)
        recent.withLock { recent in
            if recent.count >= 32 { recent.removeAll() }
            recent[key] = taps
        }
        return taps
    }

    private struct Key: Hashable {
        let input: Int
        let output: Int
        let range: Range<Int>
    }

    private static let recent = Lock<[Key: FilterTaps]>([:])

    /// The three arrays' storage, for the filter loops.
    func withPointers<R>(
        _ body: (UnsafePointer<Int>, UnsafePointer<Int>, UnsafePointer<SIMD4<Float>>) throws -> R
    ) rethrows -> R {
        try starts.withUnsafeBufferPointer { starts in
            try offsets.withUnsafeBufferPointer { offsets in
                try weights.withUnsafeBufferPointer { weights in
                    // Every position has a start and at least one weight, so no buffer is empty.
                    try body(starts.baseAddress!, offsets.baseAddress!, weights.baseAddress!)
                }
            }
        }
    }

    /// The input indices any position reads.
    var inputSpan: Range<Int> {
        var low = Int.max
        var high = 0
        for position in starts.indices {
            low = min(low, starts[position])
            high = max(high, starts[position] + offsets[position + 1] - offsets[position])
        }
        return low..<max(low, high)
    }
}

/// What the passes read: 8-bit rows taken as opaque, converted one at a time, or a premultiplied float plane.
enum ResamplerSource {
    case opaque(ImageFrame)
    case plane(PremultipliedPlane)
}

/// The two filter passes over one window: horizontal into a float buffer of the window's columns for
/// every input row the vertical taps read, then vertical, one output row at a time, into RGBA8.
struct ResamplerPasses {
    let source: ResamplerSource
    let columns: FilterTaps
    let rows: FilterTaps

    /// The window's RGBA8 rows; nil when an opaque source has an alpha byte that is not 255 where the
    /// filter reads.
    func run() -> [UInt8]? {
        let width = columns.starts.count
        let inputRows = rows.inputSpan
        let count = width * inputRows.count
        var complete = true
        // Every value is written by the horizontal pass before the vertical one reads it.
        let horizontal = [SIMD4<Float>](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = count
            guard let out = buffer.baseAddress else { return }
            columns.withPointers { starts, offsets, weights in
                switch source {
                case .plane(let plane):
                    plane.values.withUnsafeBufferPointer { values in
                        guard let values = values.baseAddress else { return }
                        for (index, y) in inputRows.enumerated() {
                            Self.filter(
                                values + y * plane.width, into: out + index * width, count: width, starts: starts,
                                offsets: offsets, weights: weights)
                        }
                    }
                case .opaque(let frame):
                    complete = Self.filterOpaque(
                        frame, rows: inputRows, columns: columns.inputSpan, into: out, count: width, starts: starts,
                        offsets: offsets, weights: weights)
                }
            }
        }
        guard complete else { return nil }
        if case .opaque = source { return vertical(horizontal, width: width, from: inputRows, opaque: true) }
        return vertical(horizontal, width: width, from: inputRows, opaque: false)
    }

    /// ``run()`` for an opaque frame through `CPixelKernels`: nil when an alpha byte the filter reads is not
    /// 255. The horizontal pass keeps only the rows the vertical one still needs, in a ring, not the whole
    /// intermediate plane.
    func runOpaqueKernels(_ frame: ImageFrame) -> [UInt8]? {
        let width = columns.starts.count
        let height = rows.starts.count
        let span = columns.inputSpan
        // The ring relies on each output row starting at or below the previous one's first row.
        guard zip(rows.starts, rows.starts.dropFirst()).allSatisfy({ $0 <= $1 }) else { return run() }
        let ringRows = zip(rows.offsets, rows.offsets.dropFirst()).map { $1 - $0 }.max() ?? 1
        var scratch = [Float](repeating: 0, count: frame.width * 4)
        // Every slot is written by the horizontal pass before the vertical one reads it.
        let ringCount = ringRows * width * 4
        var ring = [Float](unsafeUninitializedCapacity: ringCount) { _, initialized in initialized = ringCount }
        var taps = [UnsafePointer<Float>?](repeating: nil, count: ringRows)
        var opaque = false
        let byteCount = width * height * 4
        let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
            initialized = byteCount
            guard let output = buffer.baseAddress else { return }
            opaque =
                frame.pixels.withUnsafeBufferPointer { pixels in
                    columns.withPointers { columnStarts, columnOffsets, columnWeights in
                        rows.withPointers { rowStarts, rowOffsets, rowWeights in
                            scratch.withUnsafeMutableBufferPointer { scratch in
                                ring.withUnsafeMutableBufferPointer { ring in
                                    guard let pixels = pixels.baseAddress, let scratch = scratch.baseAddress,
                                        let ring = ring.baseAddress
                                    else { return 0 }
                                    return wi_resample_opaque(
                                        pixels, frame.bytesPerRow, span.lowerBound, span.upperBound, columnStarts,
                                        columnOffsets, Self.floats(columnWeights), width, rowStarts, rowOffsets,
                                        Self.floats(rowWeights), height, ringRows, scratch, ring, &taps, output)
                                }
                            }
                        }
                    }
                } != 0
        }
        return opaque ? pixels : nil
    }

    /// The broadcast weights as the floats they are made of.
    private static func floats(_ weights: UnsafePointer<SIMD4<Float>>) -> UnsafePointer<Float> {
        UnsafeRawPointer(weights).assumingMemoryBound(to: Float.self)
    }

    /// The vertical pass over the horizontal one's rows (the first is input row `inputRows.lowerBound`).
    private func vertical(_ horizontal: [SIMD4<Float>], width: Int, from inputRows: Range<Int>, opaque: Bool)
        -> [UInt8]
    {
        let height = rows.starts.count
        let byteCount = width * height * 4
        var sums = [SIMD4<Float>](repeating: .zero, count: width)
        // The opaque store writes every byte; the straight one skips transparent pixels, so they start at 0.
        return [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
            initialized = byteCount
            guard let output = buffer.baseAddress else { return }
            if !opaque { output.initialize(repeating: 0, count: byteCount) }
            horizontal.withUnsafeBufferPointer { input in
                sums.withUnsafeMutableBufferPointer { sums in
                    rows.withPointers { starts, offsets, weights in
                        guard let input = input.baseAddress, let sums = sums.baseAddress else { return }
                        for oy in 0..<height {
                            let first = offsets[oy]
                            Self.sumRows(
                                input + (starts[oy] - inputRows.lowerBound) * width, width: width,
                                weights: weights + first, taps: offsets[oy + 1] - first, into: sums)
                            let target = output + oy * width * 4
                            if opaque {
                                Self.storeOpaque(sums, count: width, into: target)
                            } else {
                                Self.storeStraight(sums, count: width, into: target)
                            }
                        }
                    }
                }
            }
        }
    }

    /// One output row of the vertical pass: `taps` consecutive rows of `width` values from `rows`, each
    /// weighted, summed into `sums`. Every value is the first product, then the others added in order (the
    /// sum the whole image's pass makes), so blocks of pixels can keep their sums in registers across the
    /// taps instead of going through memory for each.
    @inline(__always)
    private static func sumRows(
        _ rows: UnsafePointer<SIMD4<Float>>, width: Int, weights: UnsafePointer<SIMD4<Float>>, taps: Int,
        into sums: UnsafeMutablePointer<SIMD4<Float>>
    ) {
        typealias Block = SIMD16<Float>  // four pixels
        let raw = UnsafeRawPointer(rows)
        let rowBytes = width * MemoryLayout<SIMD4<Float>>.stride
        let blockBytes = MemoryLayout<Block>.stride
        var x = 0
        // Eight pixels at a time (two blocks), then four, then one.
        while x + 8 <= width {
            var source = raw + x * MemoryLayout<SIMD4<Float>>.stride
            let weight = Block(repeating: weights[0].x)
            var low = source.loadUnaligned(as: Block.self) * weight
            var high = source.loadUnaligned(fromByteOffset: blockBytes, as: Block.self) * weight
            for tap in 1..<max(1, taps) {
                source += rowBytes
                let weight = Block(repeating: weights[tap].x)
                low += source.loadUnaligned(as: Block.self) * weight
                high += source.loadUnaligned(fromByteOffset: blockBytes, as: Block.self) * weight
            }
            UnsafeMutableRawPointer(sums + x).storeBytes(of: low, as: Block.self)
            UnsafeMutableRawPointer(sums + x).storeBytes(of: high, toByteOffset: blockBytes, as: Block.self)
            x += 8
        }
        while x + 4 <= width {
            var source = raw + x * MemoryLayout<SIMD4<Float>>.stride
            var sum = source.loadUnaligned(as: Block.self) * Block(repeating: weights[0].x)
            for tap in 1..<max(1, taps) {
                source += rowBytes
                sum += source.loadUnaligned(as: Block.self) * Block(repeating: weights[tap].x)
            }
            UnsafeMutableRawPointer(sums + x).storeBytes(of: sum, as: Block.self)
            x += 4
        }
        while x < width {
            var source = rows + x
            var sum = source.pointee * weights[0]
            for tap in 1..<max(1, taps) {
                source += width
                sum += source.pointee * weights[tap]
            }
            sums[x] = sum
            x += 1
        }
    }

    /// The 8-bit rows `rows` converted (columns `columns`) and filtered into `out`; false at the first
    /// alpha byte that is not 255.
    private static func filterOpaque(
        _ frame: ImageFrame, rows: Range<Int>, columns: Range<Int>, into out: UnsafeMutablePointer<SIMD4<Float>>,
        count: Int, starts: UnsafePointer<Int>, offsets: UnsafePointer<Int>, weights: UnsafePointer<SIMD4<Float>>
    ) -> Bool {
        var converted = [SIMD4<Float>](repeating: .zero, count: frame.width)
        return frame.pixels.withUnsafeBufferPointer { pixels in
            converted.withUnsafeMutableBufferPointer { row in
                guard let pixels = pixels.baseAddress, let row = row.baseAddress else { return false }
                for (index, y) in rows.enumerated() {
                    var input = pixels + y * frame.bytesPerRow + columns.lowerBound * 4
                    var alpha: UInt8 = 255
                    for x in columns {
                        let pixel = UnsafeRawPointer(input).loadUnaligned(as: SIMD4<UInt8>.self)
                        row[x] = SIMD4<Float>(SIMD4<Int32>(truncatingIfNeeded: pixel))
                        alpha &= pixel.w
                        input += 4
                    }
                    guard alpha == 255 else { return false }
                    filter(
                        row, into: out + index * count, count: count, starts: starts, offsets: offsets, weights: weights
                    )
                }
                return true
            }
        }
    }

    /// One input row (indexed from column 0) filtered into `count` output columns.
    private static func filter(
        _ row: UnsafePointer<SIMD4<Float>>, into out: UnsafeMutablePointer<SIMD4<Float>>, count: Int,
        starts: UnsafePointer<Int>, offsets: UnsafePointer<Int>, weights: UnsafePointer<SIMD4<Float>>
    ) {
        var ox = 0
        // Four positions with the same number of taps at a time: their four sums are independent chains of
        // additions, which the processor overlaps (each sum is still added in tap order). Then one at a time.
        while ox + 4 <= count {
            let first = offsets[ox]
            let taps = offsets[ox + 1] - first
            guard offsets[ox + 4] - offsets[ox + 3] == taps, offsets[ox + 3] - offsets[ox + 2] == taps,
                offsets[ox + 2] - offsets[ox + 1] == taps
            else {
                out[ox] = filterOne(row + starts[ox], weights: weights + first, taps: taps)
                ox += 1
                continue
            }
            let (input0, input1, input2, input3) = (
                row + starts[ox], row + starts[ox + 1], row + starts[ox + 2], row + starts[ox + 3]
            )
            let (weights0, weights1, weights2, weights3) = (
                weights + first, weights + first + taps, weights + first + 2 * taps, weights + first + 3 * taps
            )
            var (sum0, sum1, sum2, sum3) = (SIMD4<Float>.zero, SIMD4<Float>.zero, SIMD4<Float>.zero, SIMD4<Float>.zero)
            for tap in 0..<taps {
                sum0 += input0[tap] * weights0[tap]
                sum1 += input1[tap] * weights1[tap]
                sum2 += input2[tap] * weights2[tap]
                sum3 += input3[tap] * weights3[tap]
            }
            (out[ox], out[ox + 1], out[ox + 2], out[ox + 3]) = (sum0, sum1, sum2, sum3)
            ox += 4
        }
        while ox < count {
            let first = offsets[ox]
            out[ox] = filterOne(row + starts[ox], weights: weights + first, taps: offsets[ox + 1] - first)
            ox += 1
        }
    }

    /// One position's weighted sum of `taps` values from `input`, added in order from zero.
    @inline(__always)
    private static func filterOne(
        _ input: UnsafePointer<SIMD4<Float>>, weights: UnsafePointer<SIMD4<Float>>, taps: Int
    ) -> SIMD4<Float> {
        var sum = SIMD4<Float>.zero
        for tap in 0..<taps { sum += input[tap] * weights[tap] }
        return sum
    }

    private static func filter(
        _ row: UnsafeMutablePointer<SIMD4<Float>>, into out: UnsafeMutablePointer<SIMD4<Float>>, count: Int,
        starts: UnsafePointer<Int>, offsets: UnsafePointer<Int>, weights: UnsafePointer<SIMD4<Float>>
    ) {
        filter(UnsafePointer(row), into: out, count: count, starts: starts, offsets: offsets, weights: weights)
    }

    /// Opaque values to RGBA8: clamped to 0…255 (Lanczos overshoots near edges) and rounded to the nearest
    /// (adding 2²³ leaves the rounded integer in the low bits of the float). The alpha lane is a sum of 255 ×
    /// weights that add up to 1, so it comes out 255.
    private static func storeOpaque(
        _ sums: UnsafePointer<SIMD4<Float>>, count: Int, into out: UnsafeMutablePointer<UInt8>
    ) {
        let target = UnsafeMutableRawPointer(out)
        let source = UnsafeRawPointer(sums)
        var x = 0
        // Four pixels at a time, then one: the same arithmetic lane by lane.
        while x + 4 <= count {
            var value = source.loadUnaligned(fromByteOffset: x * 16, as: SIMD16<Float>.self)
            value.replace(with: 0, where: value .< 0)
            value.replace(with: 255, where: value .> 255)
            let bits = unsafeBitCast(value + 8_388_608, to: SIMD16<UInt32>.self)
            target.storeBytes(of: SIMD16<UInt8>(truncatingIfNeeded: bits), toByteOffset: x * 4, as: SIMD16<UInt8>.self)
            x += 4
        }
        while x < count {
            var value = sums[x]
            value.replace(with: 0, where: value .< 0)
            value.replace(with: 255, where: value .> 255)
            let bits = unsafeBitCast(value + 8_388_608, to: SIMD4<UInt32>.self)
            target.storeBytes(
                of: SIMD4<UInt8>(truncatingIfNeeded: bits), toByteOffset: x * 4, as: SIMD4<UInt8>.self)
            x += 1
        }
    }

    /// Premultiplied values back to straight-alpha RGBA8, rounded and clamped.
    private static func storeStraight(
        _ sums: UnsafePointer<SIMD4<Float>>, count: Int, into out: UnsafeMutablePointer<UInt8>
    ) {
        for x in 0..<count {
            let value = sums[x]
            let alpha = Swift.min(255, value.w)
            guard alpha >= 0.5 else { continue }
            let scale = 255 / alpha
            let target = out + x * 4
            target[0] = UInt8(Swift.min(255, Swift.max(0, value.x * scale)) + 0.5)
            target[1] = UInt8(Swift.min(255, Swift.max(0, value.y * scale)) + 0.5)
            target[2] = UInt8(Swift.min(255, Swift.max(0, value.z * scale)) + 0.5)
            target[3] = UInt8(alpha + 0.5)
        }
    }
}

/// RGBA as premultiplied Floats (0…255 scale), one SIMD4 per pixel, row-major.
struct PremultipliedPlane {
    let width: Int
    let height: Int
    var values: [SIMD4<Float>]

    init(width: Int, height: Int, values: [SIMD4<Float>]) {
        self.width = width
        self.height = height
        self.values = values
    }

    /// The frame premultiplied, with `boxX` × `boxY` boxes of it averaged into one value (the last row
    /// and column of boxes take what is left); 1 × 1 keeps every pixel.
    init(_ frame: ImageFrame, boxX factorX: Int = 1, boxY factorY: Int = 1) {
        let sourceWidth = frame.width
        let sourceHeight = frame.height
        width = max(1, sourceWidth / max(1, factorX))
        height = max(1, sourceHeight / max(1, factorY))
        let (outWidth, outHeight) = (width, height)
        var values = [SIMD4<Float>](repeating: .zero, count: outWidth * outHeight)
        frame.pixels.withUnsafeBufferPointer { pixels in
            values.withUnsafeMutableBufferPointer { out in
                for oy in 0..<outHeight {
                    let y0 = oy * factorY
                    let y1 = oy == outHeight - 1 ? sourceHeight : y0 + factorY
                    for ox in 0..<outWidth {
                        let x0 = ox * factorX
                        let x1 = ox == outWidth - 1 ? sourceWidth : x0 + factorX
                        var sum = SIMD4<Float>.zero
                        for y in y0..<y1 {
                            let row = y * frame.bytesPerRow
                            for x in x0..<x1 {
                                let source = row + x * 4
                                let pixel = SIMD4<Float>(
                                    Float(pixels[source]), Float(pixels[source + 1]), Float(pixels[source + 2]),
                                    Float(pixels[source + 3]))
                                let scale = pixel.w / 255
                                sum += SIMD4(pixel.x * scale, pixel.y * scale, pixel.z * scale, pixel.w)
                            }
                        }
                        let count = (y1 - y0) * (x1 - x0)
                        out[oy * outWidth + ox] = count == 1 ? sum : sum / Float(count)
                    }
                }
            }
        }
        self.values = values
    }
}
