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

/// Both passes over the opaque RGBA8 image at `pixels` (`stride` bytes a row) into `width` × `height`
/// RGBA8 pixels at `out`. Each input row an output row reads is converted (its columns `spanStart ..<
/// spanEnd`, into `scratch`: at least the image's width × 4 floats, indexed from column 0) and filtered
/// horizontally once, into a ring of `ringRows` rows of `width` × 4 floats at `ring` (`ringRows` at least
/// the most taps of any output row); `taps` has room for that many row pointers. Each output value is
/// clamped to 0…255 and rounded to the nearest (ties to even). Returns 0 as soon as an alpha byte in a
/// row's span is not 255 (the caller then takes the premultiplied path), else 1.
int wi_resample_opaque(const uint8_t *_Nonnull pixels, size_t stride, ptrdiff_t spanStart, ptrdiff_t spanEnd,
                       const ptrdiff_t *_Nonnull columnStarts, const ptrdiff_t *_Nonnull columnOffsets,
                       const float *_Nonnull columnWeights, ptrdiff_t width, const ptrdiff_t *_Nonnull rowStarts,
                       const ptrdiff_t *_Nonnull rowOffsets, const float *_Nonnull rowWeights, ptrdiff_t height,
                       ptrdiff_t ringRows, float *_Nonnull scratch, float *_Nonnull ring,
                       const float *_Nullable *_Nonnull taps, uint8_t *_Nonnull out);

#endif
