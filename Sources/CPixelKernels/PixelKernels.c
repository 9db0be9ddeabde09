#include "CPixelKernels.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>

#define WI_AVX2 __attribute__((target("avx2,fma")))

int wi_pixel_kernels_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/// Columns `start ..< end` of one RGBA8 row as floats at `scratch + column * 4`; 0 when an alpha byte
/// among them is not 255.
WI_AVX2 static int convert_row(const uint8_t *row, ptrdiff_t start, ptrdiff_t end, float *scratch) {
    __m256i alpha = _mm256_set1_epi32(-1);
    ptrdiff_t x = start;
    for (; x + 8 <= end; x += 8) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(row + x * 4));
        alpha = _mm256_and_si256(alpha, bytes);
        __m128i low = _mm256_castsi256_si128(bytes);
        __m128i high = _mm256_extracti128_si256(bytes, 1);
        _mm256_storeu_ps(scratch + x * 4, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(low)));
        _mm256_storeu_ps(scratch + x * 4 + 8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(low, 8))));
        _mm256_storeu_ps(scratch + x * 4 + 16, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(high)));
        _mm256_storeu_ps(scratch + x * 4 + 24, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8))));
    }
    uint32_t rest = 0xFFFFFFFFu;
    for (; x < end; x++) {
        uint32_t pixel;
        memcpy(&pixel, row + x * 4, 4);
        rest &= pixel;
        _mm_storeu_ps(scratch + x * 4, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)pixel))));
    }
    // Every pixel's fourth byte is its alpha: the top byte of each little-endian 32-bit lane.
    __m256i mask = _mm256_set1_epi32((int)0xFF000000u);
    int vectorOpaque = _mm256_testc_si256(alpha, mask);
    return vectorOpaque && (rest & 0xFF000000u) == 0xFF000000u;
}

/// One output position's sum of `taps` taps, the pairs before tap `k` already in `sum`: the even taps are
/// summed in the low half of the register, the odd ones in the high half, then the two halves are added
/// (and an odd last tap after them).
WI_AVX2 static inline void finish(__m256 sum, ptrdiff_t k, const float *input, const float *w, ptrdiff_t taps,
                                  float *target) {
    for (; k + 2 <= taps; k += 2) {
        sum = _mm256_fmadd_ps(_mm256_loadu_ps(input + k * 4), _mm256_loadu_ps(w + k * 4), sum);
    }
    __m128 total = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    if (k < taps) total = _mm_fmadd_ps(_mm_loadu_ps(input + k * 4), _mm_loadu_ps(w + k * 4), total);
    _mm_storeu_ps(target, total);
}

/// Output position `i` of one row, alone.
WI_AVX2 static inline void filter_one(const float *scratch, const ptrdiff_t *starts, const ptrdiff_t *offsets,
                                      const float *weights, ptrdiff_t i, float *target) {
    finish(_mm256_setzero_ps(), 0, scratch + starts[i] * 4, weights + offsets[i] * 4, offsets[i + 1] - offsets[i],
           target + i * 4);
}

/// One input row's horizontal pass: columns `spanStart ..< spanEnd` converted into `scratch`, then the
/// `count` output positions filtered into `target`; 0 when an alpha byte in the span is not 255.
WI_AVX2 static int filter_row(const uint8_t *row, ptrdiff_t spanStart, ptrdiff_t spanEnd, const ptrdiff_t *starts,
                              const ptrdiff_t *offsets, const float *weights, ptrdiff_t count, float *scratch,
                              float *target) {
    if (!convert_row(row, spanStart, spanEnd, scratch)) return 0;
    ptrdiff_t i = 0;
    // Four positions side by side (independent chains of fused multiply-adds, which the processor
    // overlaps) over the pairs of taps they all have, then each finishes its own: every position's
    // value is summed exactly as `finish` alone sums it.
    for (; i + 4 <= count; i += 4) {
        const float *in0 = scratch + starts[i] * 4, *in1 = scratch + starts[i + 1] * 4;
        const float *in2 = scratch + starts[i + 2] * 4, *in3 = scratch + starts[i + 3] * 4;
        const float *w0 = weights + offsets[i] * 4, *w1 = weights + offsets[i + 1] * 4;
        const float *w2 = weights + offsets[i + 2] * 4, *w3 = weights + offsets[i + 3] * 4;
        ptrdiff_t common = offsets[i + 1] - offsets[i];
        for (int j = 1; j < 4; j++) {
            ptrdiff_t taps = offsets[i + j + 1] - offsets[i + j];
            if (taps < common) common = taps;
        }
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        ptrdiff_t k = 0;
        for (; k + 2 <= common; k += 2) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(in0 + k * 4), _mm256_loadu_ps(w0 + k * 4), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(in1 + k * 4), _mm256_loadu_ps(w1 + k * 4), s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(in2 + k * 4), _mm256_loadu_ps(w2 + k * 4), s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(in3 + k * 4), _mm256_loadu_ps(w3 + k * 4), s3);
        }
        finish(s0, k, in0, w0, offsets[i + 1] - offsets[i], target + i * 4);
        finish(s1, k, in1, w1, offsets[i + 2] - offsets[i + 1], target + i * 4 + 4);
        finish(s2, k, in2, w2, offsets[i + 3] - offsets[i + 2], target + i * 4 + 8);
        finish(s3, k, in3, w3, offsets[i + 4] - offsets[i + 3], target + i * 4 + 12);
    }
    for (; i < count; i++) filter_one(scratch, starts, offsets, weights, i, target);
    return 1;
}

/// Eight float pixels (four registers of two) clamped, rounded and packed into 32 bytes at `out`.
WI_AVX2 static void store8(__m256 a, __m256 b, __m256 c, __m256 d, uint8_t *out) {
    const __m256 low = _mm256_setzero_ps();
    const __m256 high = _mm256_set1_ps(255.0f);
    __m256i ia = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(a, low), high));
    __m256i ib = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(b, low), high));
    __m256i ic = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(c, low), high));
    __m256i id = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(d, low), high));
    // Packing works within 128-bit lanes: the pixels come out as 0 2 4 6 | 1 3 5 7, put back in order.
    __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(ia, ib), _mm256_packs_epi32(ic, id));
    bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)out, bytes);
}

/// One float pixel clamped, rounded and written as 4 bytes.
WI_AVX2 static void store1(__m128 value, uint8_t *out) {
    __m128i i = _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(value, _mm_setzero_ps()), _mm_set1_ps(255.0f)));
    __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(i, i), _mm_setzero_si128());
    uint32_t pixel = (uint32_t)_mm_cvtsi128_si32(bytes);
    memcpy(out, &pixel, 4);
}

/// One output row of the vertical pass from the `taps` rows `input[0 ..< taps]` (`width` × 4 floats each),
/// stored as RGBA8.
WI_AVX2 static void sum_rows(const float *const *input, const float *w, ptrdiff_t taps, ptrdiff_t width,
                             uint8_t *target) {
    ptrdiff_t x = 0;
    // Eight pixels at a time, their sums in registers across the taps.
    for (; x + 8 <= width; x += 8) {
        __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
        for (ptrdiff_t k = 0; k < taps; k++) {
            __m256 weight = _mm256_broadcast_ss(w + k * 4);
            const float *row = input[k] + x * 4;
            a = _mm256_fmadd_ps(_mm256_loadu_ps(row), weight, a);
            b = _mm256_fmadd_ps(_mm256_loadu_ps(row + 8), weight, b);
            c = _mm256_fmadd_ps(_mm256_loadu_ps(row + 16), weight, c);
            d = _mm256_fmadd_ps(_mm256_loadu_ps(row + 24), weight, d);
        }
        store8(a, b, c, d, target + x * 4);
    }
    for (; x < width; x++) {
        __m128 sum = _mm_setzero_ps();
        for (ptrdiff_t k = 0; k < taps; k++) {
            sum = _mm_fmadd_ps(_mm_loadu_ps(input[k] + x * 4), _mm_broadcast_ss(w + k * 4), sum);
        }
        store1(sum, target + x * 4);
    }
}

WI_AVX2 int wi_resample_opaque(const uint8_t *pixels, size_t stride, ptrdiff_t spanStart, ptrdiff_t spanEnd,
                               const ptrdiff_t *columnStarts, const ptrdiff_t *columnOffsets,
                               const float *columnWeights, ptrdiff_t width, const ptrdiff_t *rowStarts,
                               const ptrdiff_t *rowOffsets, const float *rowWeights, ptrdiff_t height,
                               ptrdiff_t ringRows, float *scratch, float *ring, const float **taps, uint8_t *out) {
    size_t rowFloats = (size_t)width * 4;
    // The ring holds the last `ringRows` filtered input rows; row r in slot r % ringRows. Both ends of the
    // rows each output row reads only move down, so a row leaves the ring after its last reader.
    ptrdiff_t next = rowStarts[0];
    for (ptrdiff_t y = 0; y < height; y++) {
        ptrdiff_t first = rowStarts[y];
        ptrdiff_t count = rowOffsets[y + 1] - rowOffsets[y];
        if (next < first) next = first;
        for (; next < first + count; next++) {
            float *slot = ring + (size_t)(next % ringRows) * rowFloats;
            if (!filter_row(pixels + (size_t)next * stride, spanStart, spanEnd, columnStarts, columnOffsets,
                            columnWeights, width, scratch, slot)) {
                return 0;
            }
        }
        for (ptrdiff_t k = 0; k < count; k++) taps[k] = ring + (size_t)((first + k) % ringRows) * rowFloats;
        sum_rows(taps, rowWeights + rowOffsets[y] * 4, count, width, out + (size_t)y * width * 4);
    }
    return 1;
}

#else

int wi_pixel_kernels_available(void) { return 0; }

int wi_resample_opaque(const uint8_t *pixels, size_t stride, ptrdiff_t spanStart, ptrdiff_t spanEnd,
                       const ptrdiff_t *columnStarts, const ptrdiff_t *columnOffsets, const float *columnWeights,
                       ptrdiff_t width, const ptrdiff_t *rowStarts, const ptrdiff_t *rowOffsets,
                       const float *rowWeights, ptrdiff_t height, ptrdiff_t ringRows, float *scratch, float *ring,
                       const float **taps, uint8_t *out) {
    (void)pixels, (void)stride, (void)spanStart, (void)spanEnd, (void)columnStarts, (void)columnOffsets;
    (void)columnWeights, (void)width, (void)rowStarts, (void)rowOffsets, (void)rowWeights, (void)height;
    (void)ringRows, (void)scratch, (void)ring, (void)taps, (void)out;
    return 0;
}

#endif
