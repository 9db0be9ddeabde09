// libjpeg-turbo. libjpeg reports fatal errors with longjmp, which must never cross a Swift frame, so
// every call that can fail goes through the C functions declared here (implemented in CJPEG.c). Each
// function that calls into libjpeg sets its own setjmp point and returns an error code instead.
#ifndef WEBIMAGE_CJPEG_H
#define WEBIMAGE_CJPEG_H
#include <stddef.h>
#include <stdint.h>

/// libjpeg-turbo's version, e.g. 2001005 for 2.1.5.
int wi_jpeg_library_version(void);

/// One decode: a libjpeg decompressor over a caller-owned memory buffer. Not thread-safe; one per decode.
typedef struct wi_jpeg_decoder wi_jpeg_decoder;

/// Color spaces as the file declares them.
enum {
    WI_JPEG_GRAY = 1,
    WI_JPEG_RGB = 2,   // RGB or YCbCr, converted by libjpeg-turbo straight to RGBA
    WI_JPEG_CMYK = 3,  // CMYK or YCCK, converted to RGBA in CJPEG.c
};

/// What the header declares.
typedef struct {
    int width;
    int height;
    int components;
    int colorSpace;
    int progressive;
    int adobeMarker;
} wi_jpeg_header;

/// Creates a decompressor over `data[0..<length]`, which must stay valid until `wi_jpeg_destroy`.
/// Returns NULL when memory runs out.
wi_jpeg_decoder *_Nullable wi_jpeg_create(const uint8_t *_Nonnull data, size_t length);
/// Frees everything the decompressor holds.
void wi_jpeg_destroy(wi_jpeg_decoder *_Nullable decoder);
/// Reads the header (no pixel memory is allocated). Returns 0, or -1 with `wi_jpeg_error_message` set.
int wi_jpeg_read_header(wi_jpeg_decoder *_Nonnull decoder, wi_jpeg_header *_Nonnull header);
/// The output size libjpeg produces with DCT scaling 1/`denominator` (1, 2, 4 or 8). Returns 0 or -1.
int wi_jpeg_scaled_size(wi_jpeg_decoder *_Nonnull decoder, int denominator, int *_Nonnull width,
                        int *_Nonnull height);
/// Decodes with DCT scaling 1/`denominator` into RGBA8 rows of `stride` bytes. `width`/`height` must be
/// what `wi_jpeg_scaled_size` reported. Rows that could not be decoded are zero-filled. Returns 0, or -1
/// with the error message set; `rowsDecoded` tells how many rows hold decoded pixels either way.
int wi_jpeg_decode(wi_jpeg_decoder *_Nonnull decoder, int denominator, uint8_t *_Nonnull pixels, size_t stride,
                   int width, int height, int *_Nonnull rowsDecoded);
/// Whether the data ended before the image did (libjpeg then decodes the rest as gray).
int wi_jpeg_was_truncated(const wi_jpeg_decoder *_Nonnull decoder);
/// The ICC profile of the APP2 markers, reassembled, after `wi_jpeg_read_header`: returns 1 and sets
/// `*profile` (free it with `wi_jpeg_free`) and `*length`; 0 when there is none (or it is damaged); -1 on
/// error.
int wi_jpeg_icc_profile(wi_jpeg_decoder *_Nonnull decoder, uint8_t *_Nullable *_Nonnull profile,
                        unsigned int *_Nonnull length);
/// Frees memory `wi_jpeg_icc_profile` returned.
void wi_jpeg_free(void *_Nullable memory);
/// For CMYK files only: with `raw` set, `wi_jpeg_decode` writes the four CMYK samples of each pixel as ink
/// amounts (0 = no ink; Adobe's inverted files are turned around) instead of converting to RGBA, so the
/// caller can convert them through the file's ICC profile.
void wi_jpeg_set_raw_cmyk(wi_jpeg_decoder *_Nonnull decoder, int raw);
/// The last error's text from libjpeg ("" when none).
const char *_Nonnull wi_jpeg_error_message(const wi_jpeg_decoder *_Nonnull decoder);

/// Encodes `height` rows of RGBX pixels (4 bytes a pixel, the fourth ignored), `stride` bytes apart, as a
/// baseline (or with `progressive`, progressive) JPEG at `quality` 1…100 with 4:2:0 chroma (4:4:4 with
/// `subsampling444`), optionally with an ICC profile (APP2) and EXIF data (APP1, the bytes after "Exif\0\0"
/// included, at most 65,533). `optimizeCoding` makes Huffman tables for the image (a second pass over it)
/// instead of the standard ones; progressive scans always have them. On success returns 0 and sets `*output` (free it with `wi_jpeg_free`) and
/// `*length`; on failure returns -1 with libjpeg's message in `message`.
///
/// `shouldStop`, when given, is called with `stopContext` from libjpeg's progress monitor: while the rows
/// are written and during every pass `jpeg_finish_compress` makes (Huffman optimisation, progressive
/// scans), where most of a progressive encode's time goes. When it returns non-zero the encode is
/// abandoned and the function returns -2.
int wi_jpeg_encode_rgbx(const uint8_t *_Nonnull pixels, int width, int height, size_t stride, int quality,
                        int progressive, int subsampling444, int optimizeCoding, const uint8_t *_Nullable icc,
                        size_t iccLength,
                        const uint8_t *_Nullable exif, size_t exifLength, uint8_t *_Nullable *_Nonnull output,
                        size_t *_Nonnull length, char *_Nonnull message, size_t messageLength,
                        int (*_Nullable shouldStop)(void *_Nullable), void *_Nullable stopContext);

#endif
