#ifndef WEBIMAGE_CPIXELKERNELS_H
#define WEBIMAGE_CPIXELKERNELS_H

#include <stddef.h>
#include <stdint.h>

/// The Lanczos resampler's two passes over opaque RGBA8 images, written with AVX2 and FMA for x86-64
/// processors that have them (chosen at run time; elsewhere the Swift passes run).
///
/// Filter taps are the resampler's own arrays: for output position `i`, `starts[i]` is its first input
/// index and its weights are `weights[offsets[i] * 4 ..< offsets[i + 1] * 4]`, each weight repeated in
/// four consecutive floats (one per channel).

/// Whether this processor runs the kernels below (x86-64 with AVX2 and FMA).
int wi_pixel_kernels_available(void);

/// The horizontal pass: for each of `rowCount` rows from `firstRow` of the RGBA8 image at `pixels`
/// (`stride` bytes a row), the input columns `spanStart ..< spanEnd` are converted to floats in `scratch`
/// (at least `inputWidth` × 4 floats, indexed from column 0), then the `count` output positions are
/// filtered into `out` (`count` × 4 floats a row, rows one after another). Returns 0 as soon as an alpha
/// byte in the span is not 255 (the caller then takes the premultiplied path), else 1.
int wi_resample_rows_opaque(const uint8_t *_Nonnull pixels, size_t stride, ptrdiff_t firstRow,
                            ptrdiff_t rowCount, ptrdiff_t spanStart, ptrdiff_t spanEnd,
                            const ptrdiff_t *_Nonnull starts, const ptrdiff_t *_Nonnull offsets,
                            const float *_Nonnull weights, ptrdiff_t count, float *_Nonnull scratch,
                            float *_Nonnull out);

/// The vertical pass and the store: output row `y` of `height` sums the rows `starts[y] - firstRow` …
/// of `rows` (`width` × 4 floats each) with its weights; each value is clamped to 0…255, rounded to the
/// nearest (ties to even) and written as RGBA8 to `out` (`width` × 4 bytes a row).
void wi_resample_columns_opaque(const float *_Nonnull rows, ptrdiff_t width, ptrdiff_t firstRow,
                                const ptrdiff_t *_Nonnull starts, const ptrdiff_t *_Nonnull offsets,
                                const float *_Nonnull weights, ptrdiff_t height, uint8_t *_Nonnull out);

#endif
