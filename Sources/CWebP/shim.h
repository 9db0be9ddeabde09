// libwebp and libwebpdemux (Debian's libwebp-dev). Neither library longjmps, so Swift calls them directly.
#ifndef WEBIMAGE_CWEBP_SHIM_H
#define WEBIMAGE_CWEBP_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>

// Baselines for the decode benchmark (not used by the library).

/// Decodes with libwebp's WebPDecodeRGBA (which allocates) and frees the result; 0 or -1.
static inline int wi_bench_webp_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width,
                                       int *_Nonnull height) {
    uint8_t *pixels = WebPDecodeRGBA(data, length, width, height);
    if (!pixels) return -1;
    WebPFree(pixels);
    return 0;
}

/// Encodes RGBA as lossy WebP; free `*output` with `wi_bench_webp_free`. 0 or -1.
static inline int wi_bench_webp_encode(const uint8_t *_Nonnull pixels, int width, int height, float quality,
                                       uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length) {
    uint8_t *buffer = NULL;
    size_t size = WebPEncodeRGBA(pixels, width, height, width * 4, quality, &buffer);
    if (size == 0) return -1;
    *output = buffer;
    *length = size;
    return 0;
}

/// Frees memory `wi_bench_webp_encode` returned.
static inline void wi_bench_webp_free(uint8_t *_Nullable buffer) { WebPFree(buffer); }
#endif
