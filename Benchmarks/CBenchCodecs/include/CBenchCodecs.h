// Baselines for the decode benchmark and encoders for its file set (not used by the library).
#ifndef WEBIMAGE_CBENCHCODECS_H
#define WEBIMAGE_CBENCHCODECS_H
#include <stddef.h>
#include <stdint.h>

/// Reads a PNG's size with the simplified API; 0 or -1.
int wi_bench_png_size(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width, int *_Nonnull height);
/// Decodes with libpng's simplified API (png_image_*) to RGBA; 0 or -1.
int wi_bench_png_decode(const uint8_t *_Nonnull data, size_t length, uint8_t *_Nonnull pixels, int width,
                        int height);
/// Encodes RGBA as PNG with the simplified API; free `*output` with free(). 0 or -1.
int wi_bench_png_encode(const uint8_t *_Nonnull pixels, int width, int height, uint8_t *_Nullable *_Nonnull output,
                        size_t *_Nonnull length);
/// Frees memory `wi_bench_png_encode` returned.
void wi_bench_png_free(uint8_t *_Nullable buffer);

/// Decodes with TurboJPEG's tjDecompress2 into RGBA; returns 0 or -1.
int wi_bench_tj_decode(const uint8_t *_Nonnull data, size_t length, uint8_t *_Nonnull pixels, int width,
                       int height);
/// Reads a JPEG's size with TurboJPEG; returns 0 or -1.
int wi_bench_tj_size(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width, int *_Nonnull height);
/// Encodes RGBA as a 4:2:0 JPEG; free `*output` with `wi_bench_tj_free`. Returns 0 or -1.
int wi_bench_tj_encode(const uint8_t *_Nonnull pixels, int width, int height, int quality,
                       uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length);
/// Frees memory `wi_bench_tj_encode` returned.
void wi_bench_tj_free(uint8_t *_Nullable buffer);

/// Decodes with libwebp's WebPDecodeRGBA (which allocates) and frees the result; 0 or -1.
int wi_bench_webp_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width,
                         int *_Nonnull height);

/// Encodes RGBA as lossy WebP; free `*output` with `wi_bench_webp_free`. 0 or -1.
int wi_bench_webp_encode(const uint8_t *_Nonnull pixels, int width, int height, float quality,
                         uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length);

/// Frees memory `wi_bench_webp_encode` returned.
void wi_bench_webp_free(uint8_t *_Nullable buffer);

/// Decodes the first image with libavif (avifDecoderParse, avifDecoderNextImage, avifImageYUVToRGB to
/// RGBA8 in a buffer it allocates and frees); 0 or -1.
int wi_bench_avif_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width, int *_Nonnull height);
/// Decodes with libjxl's JxlDecoder to RGBA8 (one thread, a buffer it allocates and frees); 0 or -1.
int wi_bench_jxl_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width, int *_Nonnull height);

/// Decodes the primary image with libheif (heif_context_read_from_memory_without_copy,
/// heif_context_get_primary_image_handle, heif_decode_image to interleaved RGBA8 with HDR reduced to 8 bits:
/// the calls HEIFDecoder makes), then releases it; 0 or -1.
int wi_bench_heif_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width, int *_Nonnull height);
/// Encodes RGBA (alpha dropped) as HEIC with libheif's HEVC encoder at `quality` (0–100); free `*output` with
/// `wi_bench_heif_free`. 0 or -1.
int wi_bench_heif_encode(const uint8_t *_Nonnull pixels, int width, int height, int quality,
                         uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length);
/// Frees memory `wi_bench_heif_encode` returned.
void wi_bench_heif_free(uint8_t *_Nullable buffer);
/// libheif's version ("1.15.1"), for the report.
const char *_Nonnull wi_bench_heif_version(void);
#endif
