// libpng. libpng reports fatal errors with longjmp, which must never cross a Swift frame, so every
// call that can fail goes through the C functions declared here (implemented in CPNG.c). Each function
// that calls into libpng sets its own setjmp point and returns an error code instead.
#ifndef WEBIMAGE_CPNG_H
#define WEBIMAGE_CPNG_H
#include <stddef.h>
#include <stdint.h>

/// The libpng version string of the linked library, e.g. "1.6.39".
const char *_Nonnull wi_png_library_version(void);

/// What the IHDR and tRNS chunks declare, and the colour chunks before the image data.
typedef struct {
    uint32_t width;
    uint32_t height;
    int bitDepth;
    int colorType;
    int interlaced;
    int hasAlpha;  // an alpha channel or a tRNS chunk
    int hasSRGB;   // an sRGB chunk
    // The iCCP chunk's profile, decompressed; NULL when absent. Owned by libpng: valid until the reader
    // or stream is destroyed.
    const uint8_t *_Nullable iccProfile;
    uint32_t iccProfileLength;
    int hasGamma;   // a gAMA chunk
    double gamma;   // its file gamma (e.g. 0.45455)
    int hasChromaticities;   // a cHRM chunk
    double chromaticities[8];  // white x, y, red x, y, green x, y, blue x, y
} wi_png_header;

/// One-shot decode of a PNG held in memory. Not thread-safe; one per decode.
typedef struct wi_png_decoder wi_png_decoder;

/// Creates a reader over `data[0..<length]`, which must stay valid until `wi_png_destroy`. NULL when
/// memory runs out.
wi_png_decoder *_Nullable wi_png_create(const uint8_t *_Nonnull data, size_t length);
/// Frees the reader.
void wi_png_destroy(wi_png_decoder *_Nullable decoder);
/// Reads the chunks before the image data (nothing as large as the image is allocated). 0 or -1.
int wi_png_read_header(wi_png_decoder *_Nonnull decoder, wi_png_header *_Nonnull header);
/// Decodes to RGBA8 rows of `stride` bytes, averaging `factor`×`factor` boxes when `factor` > 1 (the
/// output is then ceil(width / factor) × ceil(height / factor); interlaced images need `factor` 1).
/// Rows not decoded are zero. Returns 0, or -1 with the message set; `rowsDecoded` counts output rows
/// complete (for interlaced images: rows of the last pass reached, a coarse image before that).
int wi_png_decode(wi_png_decoder *_Nonnull decoder, int factor, uint8_t *_Nonnull pixels, size_t stride,
                  uint32_t width, uint32_t height, uint32_t *_Nonnull rowsDecoded);
/// Decodes a 16-bit PNG at full size to RGBA16 rows (native byte order) of `stride` bytes, otherwise as
/// `wi_png_decode`: for a colour conversion made before the samples are reduced to 8 bits.
int wi_png_decode16(wi_png_decoder *_Nonnull decoder, uint16_t *_Nonnull pixels, size_t stride, uint32_t width,
                    uint32_t height, uint32_t *_Nonnull rowsDecoded);
/// The last error's text from libpng ("" when none).
const char *_Nonnull wi_png_error_message(const wi_png_decoder *_Nonnull decoder);

/// Progressive decode (libpng's push reader, png_process_data): bytes are fed as they arrive and rows
/// land in a full-size RGBA8 buffer the stream owns. Not thread-safe; one per download.
typedef struct wi_png_stream wi_png_stream;

/// What a progressive stream has seen so far.
typedef struct {
    wi_png_header header;
    int headerSeen;     // IHDR parsed; `header` valid
    int declined;       // the image is larger than `maxPixels`; the stream stopped without allocating
    int complete;       // IEND reached
    int failed;         // libpng reported an error; the message says which
    uint32_t rowsSeen;  // row callbacks so far, over all passes
    int pass;           // current interlace pass (0…6)
} wi_png_stream_state;

/// Creates a stream that decodes images up to `maxPixels` pixels. NULL when memory runs out.
wi_png_stream *_Nullable wi_png_stream_create(uint64_t maxPixels);
/// Frees the stream and its pixels.
void wi_png_stream_destroy(wi_png_stream *_Nullable stream);
/// Feeds the next `length` bytes. 0, or -1 once the stream has failed or declined (it then ignores input).
int wi_png_stream_feed(wi_png_stream *_Nonnull stream, const uint8_t *_Nonnull data, size_t length);
/// The stream's progress.
wi_png_stream_state wi_png_stream_get_state(const wi_png_stream *_Nonnull stream);
/// The RGBA8 buffer (width × height × 4 bytes, zero where nothing arrived yet), NULL before the header.
const uint8_t *_Nullable wi_png_stream_pixels(const wi_png_stream *_Nonnull stream);
/// The last error's text from libpng ("" when none).
const char *_Nonnull wi_png_stream_error_message(const wi_png_stream *_Nonnull stream);

// Encoding (used by PNGEncoder and the CLI's contact sheet).

/// Encodes `height` rows of straight-alpha RGBA8 pixels, `stride` bytes apart, as an 8-bit RGBA PNG
/// (non-interlaced, zlib level `compressionLevel` 0…9), with an iCCP chunk holding `icc` when it is not
/// NULL (an RGB profile, `iccLength` bytes) and an eXIf chunk holding `exif` (a TIFF-structured EXIF
/// block, `exifLength` bytes) when it is not NULL. On success returns 0 and sets `*output` (free it
/// with `wi_png_encode_free`) and `*length`; on failure returns -1 and writes libpng's message, NUL
/// terminated, into `message` (`messageLength` bytes).
///
/// `shouldStop`, when given, is called with `stopContext` before every 16th row is compressed (zlib's work
/// happens as rows are written); when it returns non-zero the encode is abandoned and the function
/// returns -2.
int wi_png_encode_rgba(const uint8_t *_Nonnull pixels, uint32_t width, uint32_t height, size_t stride,
                       int compressionLevel, const uint8_t *_Nullable icc, uint32_t iccLength,
                       const uint8_t *_Nullable exif, uint32_t exifLength, uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length, char *_Nonnull message,
                       size_t messageLength, int (*_Nullable shouldStop)(void *_Nullable),
                       void *_Nullable stopContext);
/// `wi_png_encode_rgba` for RGBA16 samples in native byte order (`stride` in bytes): a 16-bit PNG.
int wi_png_encode_rgba16(const uint16_t *_Nonnull samples, uint32_t width, uint32_t height, size_t stride,
                         int compressionLevel, const uint8_t *_Nullable icc, uint32_t iccLength,
                         const uint8_t *_Nullable exif, uint32_t exifLength, uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length, char *_Nonnull message,
                         size_t messageLength, int (*_Nullable shouldStop)(void *_Nullable),
                         void *_Nullable stopContext);
/// Frees memory `wi_png_encode_rgba` and `wi_png_encode_rgba16` return.
void wi_png_encode_free(uint8_t *_Nullable buffer);
#endif
