#include "CPNG.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *wi_png_library_version(void) { return png_get_libpng_ver(NULL); }

#define WI_PNG_MESSAGE_LENGTH 200

// ---- Shared by the one-shot and the progressive reader, so both produce the same pixels. ----

static void wi_png_store_message(char *buffer, const char *message) {
    snprintf(buffer, WI_PNG_MESSAGE_LENGTH, "%s", message ? message : "unknown libpng error");
}

static void wi_png_ignore_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

static void wi_png_fill_header(png_structp png, png_infop info, wi_png_header *header) {
    header->width = png_get_image_width(png, info);
    header->height = png_get_image_height(png, info);
    header->bitDepth = png_get_bit_depth(png, info);
    header->colorType = png_get_color_type(png, info);
    header->interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE;
    header->hasAlpha = (header->colorType & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    header->hasSRGB = png_get_valid(png, info, PNG_INFO_sRGB) ? 1 : 0;
    png_charp name = NULL;
    int compression = 0;
    png_bytep profile = NULL;
    png_uint_32 length = 0;
    if (png_get_iCCP(png, info, &name, &compression, &profile, &length) == PNG_INFO_iCCP && profile && length > 0) {
        header->iccProfile = profile;
        header->iccProfileLength = length;
    }
    double gamma = 0;
    header->hasGamma = png_get_gAMA(png, info, &gamma) == PNG_INFO_gAMA && gamma > 0 ? 1 : 0;
    header->gamma = gamma;
    double *c = header->chromaticities;
    header->hasChromaticities =
        png_get_cHRM(png, info, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7]) == PNG_INFO_cHRM ? 1 : 0;
}

// Every color type and depth to RGBA8: palette and gray below 8 bits expand, tRNS becomes alpha,
// 16-bit keeps the high byte, gray is copied to RGB, opaque images get alpha 255. No gamma is applied:
// pixels are as stored.
static void wi_png_set_transforms(png_structp png, png_infop info) {
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
    (void)info;
}

// 16-bit images to RGBA16 in native byte order, for a colour conversion done before the reduction to 8 bits:
// tRNS becomes alpha, gray is copied to RGB, opaque images get alpha 65535.
static void wi_png_set_transforms16(png_structp png) {
    png_set_expand(png);
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xffff, PNG_FILLER_AFTER);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    png_set_swap(png);
#endif
}

// ---- One-shot reader ----

struct wi_png_decoder {
    png_structp png;
    png_infop info;
    jmp_buf jump;
    const uint8_t *data;
    size_t length;
    size_t offset;
    uint32_t rowsDecoded;
    int interlacedPassesDone;  // -1 when not interlaced
    uint8_t *row;
    uint32_t *sums;
    char message[WI_PNG_MESSAGE_LENGTH];
};

static void wi_png_error(png_structp png, png_const_charp message) {
    wi_png_decoder *decoder = (wi_png_decoder *)png_get_error_ptr(png);
    wi_png_store_message(decoder->message, message);
    longjmp(decoder->jump, 1);
}

static void wi_png_read(png_structp png, png_bytep out, png_size_t count) {
    wi_png_decoder *decoder = (wi_png_decoder *)png_get_io_ptr(png);
    if (count > decoder->length - decoder->offset) png_error(png, "PNG data ends early");
    memcpy(out, decoder->data + decoder->offset, count);
    decoder->offset += count;
}

wi_png_decoder *wi_png_create(const uint8_t *data, size_t length) {
    wi_png_decoder *decoder = calloc(1, sizeof *decoder);
    if (!decoder) return NULL;
    decoder->data = data;
    decoder->length = length;
    decoder->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, decoder, wi_png_error, wi_png_ignore_warning);
    if (decoder->png) decoder->info = png_create_info_struct(decoder->png);
    if (!decoder->png || !decoder->info) {
        wi_png_destroy(decoder);
        return NULL;
    }
    png_set_read_fn(decoder->png, decoder, wi_png_read);
    return decoder;
}

void wi_png_destroy(wi_png_decoder *decoder) {
    if (!decoder) return;
    if (decoder->png) png_destroy_read_struct(&decoder->png, decoder->info ? &decoder->info : NULL, NULL);
    free(decoder->row);
    free(decoder->sums);
    free(decoder);
}

int wi_png_read_header(wi_png_decoder *decoder, wi_png_header *header) {
    if (setjmp(decoder->jump)) return -1;
    png_read_info(decoder->png, decoder->info);
    wi_png_fill_header(decoder->png, decoder->info, header);
    return 0;
}

// Adds one source row to the column sums of the current output row.
static void wi_png_accumulate(uint32_t *sums, const uint8_t *row, uint32_t sourceWidth, int factor) {
    for (uint32_t x = 0; x < sourceWidth; x++) {
        uint32_t *sum = sums + (size_t)(x / (uint32_t)factor) * 4;
        sum[0] += row[0];
        sum[1] += row[1];
        sum[2] += row[2];
        sum[3] += row[3];
        row += 4;
    }
}

static void wi_png_emit_box_row(uint32_t *sums, uint8_t *out, uint32_t sourceWidth, uint32_t width, int factor,
                                uint32_t rowsInBox) {
    for (uint32_t x = 0; x < width; x++) {
        uint32_t columns = sourceWidth - x * (uint32_t)factor;
        if (columns > (uint32_t)factor) columns = (uint32_t)factor;
        uint32_t count = columns * rowsInBox;
        for (int c = 0; c < 4; c++) out[x * 4 + c] = (uint8_t)((sums[x * 4 + c] + count / 2) / count);
    }
    memset(sums, 0, (size_t)width * 4 * sizeof *sums);
}

static int wi_png_decode_rows(wi_png_decoder *decoder, int wide, int factor, uint8_t *pixels, size_t stride,
                              uint32_t width, uint32_t height, uint32_t *rowsDecoded);

int wi_png_decode(wi_png_decoder *decoder, int factor, uint8_t *pixels, size_t stride, uint32_t width,
                  uint32_t height, uint32_t *rowsDecoded) {
    return wi_png_decode_rows(decoder, 0, factor, pixels, stride, width, height, rowsDecoded);
}

int wi_png_decode16(wi_png_decoder *decoder, uint16_t *pixels, size_t stride, uint32_t width, uint32_t height,
                    uint32_t *rowsDecoded) {
    return wi_png_decode_rows(decoder, 1, 1, (uint8_t *)pixels, stride, width, height, rowsDecoded);
}

// `wide`: RGBA16 (16-bit images only, `factor` 1) instead of RGBA8.
static int wi_png_decode_rows(wi_png_decoder *decoder, int wide, int factor, uint8_t *pixels, size_t stride,
                              uint32_t width, uint32_t height, uint32_t *rowsDecoded) {
    png_structp png = decoder->png;
    png_infop info = decoder->info;
    decoder->rowsDecoded = 0;
    decoder->interlacedPassesDone = -1;
    *rowsDecoded = 0;
    if (setjmp(decoder->jump)) {
        if (decoder->interlacedPassesDone >= 0) {
            // The buffer was zeroed before the first pass; once a pass is complete it holds a coarse image.
            *rowsDecoded = decoder->interlacedPassesDone > 0 ? height : 0;
            return -1;
        }
        if (decoder->rowsDecoded < height)
            memset(pixels + (size_t)decoder->rowsDecoded * stride, 0,
                   (size_t)(height - decoder->rowsDecoded) * stride);
        *rowsDecoded = decoder->rowsDecoded;
        return -1;
    }
    uint32_t sourceWidth = png_get_image_width(png, info);
    uint32_t sourceHeight = png_get_image_height(png, info);
    if (factor < 1) factor = 1;
    if ((sourceWidth + (uint32_t)factor - 1) / (uint32_t)factor != width ||
        (sourceHeight + (uint32_t)factor - 1) / (uint32_t)factor != height)
        png_error(png, "PNG output size does not match the header");
    if (wide && (png_get_bit_depth(png, info) != 16 || factor != 1))
        png_error(png, "RGBA16 output needs a 16-bit PNG at full size");
    if (wide)
        wi_png_set_transforms16(png);
    else
        wi_png_set_transforms(png, info);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)sourceWidth * (wide ? 8 : 4)) png_error(png, "unexpected PNG row size");

    if (passes > 1) {
        if (factor != 1) png_error(png, "interlaced PNG cannot be box-scaled while reading");
        // Later passes fill in pixels between the earlier ones, so start from zero.
        memset(pixels, 0, (size_t)height * stride);
        decoder->interlacedPassesDone = 0;
        for (int pass = 0; pass < passes; pass++) {
            for (uint32_t y = 0; y < height; y++) png_read_row(png, pixels + (size_t)y * stride, NULL);
            decoder->interlacedPassesDone = pass + 1;
        }
        decoder->rowsDecoded = height;
    } else if (factor == 1) {
        for (uint32_t y = 0; y < height; y++) {
            png_read_row(png, pixels + (size_t)y * stride, NULL);
            decoder->rowsDecoded = y + 1;
        }
    } else {
        decoder->row = malloc((size_t)sourceWidth * 4);
        decoder->sums = calloc((size_t)width * 4, sizeof *decoder->sums);
        if (!decoder->row || !decoder->sums) png_error(png, "out of memory");
        uint32_t rowsInBox = 0;
        for (uint32_t y = 0; y < sourceHeight; y++) {
            png_read_row(png, decoder->row, NULL);
            wi_png_accumulate(decoder->sums, decoder->row, sourceWidth, factor);
            rowsInBox++;
            if (rowsInBox == (uint32_t)factor || y + 1 == sourceHeight) {
                uint32_t outY = y / (uint32_t)factor;
                wi_png_emit_box_row(decoder->sums, pixels + (size_t)outY * stride, sourceWidth, width, factor,
                                    rowsInBox);
                rowsInBox = 0;
                decoder->rowsDecoded = outY + 1;
            }
        }
    }
    *rowsDecoded = decoder->rowsDecoded;
    // The chunks after the image data (text, time) do not change the pixels; they are not read.
    return 0;
}

const char *wi_png_error_message(const wi_png_decoder *decoder) { return decoder->message; }

// ---- Progressive reader ----

struct wi_png_stream {
    png_structp png;
    png_infop info;
    jmp_buf jump;
    uint64_t maxPixels;
    wi_png_stream_state state;
    uint8_t *pixels;
    char message[WI_PNG_MESSAGE_LENGTH];
};

static void wi_png_stream_error(png_structp png, png_const_charp message) {
    wi_png_stream *stream = (wi_png_stream *)png_get_error_ptr(png);
    wi_png_store_message(stream->message, message);
    longjmp(stream->jump, 1);
}

static void wi_png_stream_info(png_structp png, png_infop info) {
    wi_png_stream *stream = (wi_png_stream *)png_get_progressive_ptr(png);
    wi_png_fill_header(png, info, &stream->state.header);
    stream->state.headerSeen = 1;
    uint64_t pixels = (uint64_t)stream->state.header.width * stream->state.header.height;
    if (pixels == 0 || pixels > stream->maxPixels) {
        stream->state.declined = 1;
        png_error(png, "PNG is larger than the progressive decode allows");
    }
    wi_png_set_transforms(png, info);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)stream->state.header.width * 4)
        png_error(png, "unexpected PNG row size");
    stream->pixels = calloc((size_t)pixels, 4);
    if (!stream->pixels) png_error(png, "out of memory");
}

static void wi_png_stream_row(png_structp png, png_bytep row, png_uint_32 y, int pass) {
    wi_png_stream *stream = (wi_png_stream *)png_get_progressive_ptr(png);
    if (!row || y >= stream->state.header.height) return;
    png_progressive_combine_row(png, stream->pixels + (size_t)y * stream->state.header.width * 4, row);
    stream->state.rowsSeen++;
    stream->state.pass = pass;
}

static void wi_png_stream_end(png_structp png, png_infop info) {
    wi_png_stream *stream = (wi_png_stream *)png_get_progressive_ptr(png);
    (void)info;
    stream->state.complete = 1;
}

wi_png_stream *wi_png_stream_create(uint64_t maxPixels) {
    wi_png_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NULL;
    stream->maxPixels = maxPixels;
    stream->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, stream, wi_png_stream_error, wi_png_ignore_warning);
    if (stream->png) stream->info = png_create_info_struct(stream->png);
    if (!stream->png || !stream->info) {
        wi_png_stream_destroy(stream);
        return NULL;
    }
    png_set_progressive_read_fn(stream->png, stream, wi_png_stream_info, wi_png_stream_row, wi_png_stream_end);
    return stream;
}

void wi_png_stream_destroy(wi_png_stream *stream) {
    if (!stream) return;
    if (stream->png) png_destroy_read_struct(&stream->png, stream->info ? &stream->info : NULL, NULL);
    free(stream->pixels);
    free(stream);
}

int wi_png_stream_feed(wi_png_stream *stream, const uint8_t *data, size_t length) {
    if (stream->state.failed || stream->state.declined) return -1;
    if (stream->state.complete || length == 0) return 0;
    if (setjmp(stream->jump)) {
        if (!stream->state.declined) stream->state.failed = 1;
        return -1;
    }
    png_process_data(stream->png, stream->info, (png_bytep)data, length);
    return 0;
}

wi_png_stream_state wi_png_stream_get_state(const wi_png_stream *stream) { return stream->state; }

const uint8_t *wi_png_stream_pixels(const wi_png_stream *stream) { return stream->pixels; }

const char *wi_png_stream_error_message(const wi_png_stream *stream) { return stream->message; }

// ---- Encoder ----

// The PNG grows in a heap buffer that the write callback doubles as needed.
typedef struct {
    uint8_t *bytes;
    size_t length;
    size_t capacity;
    char *message;
    size_t messageLength;
    jmp_buf jump;
} wi_png_writer;

static void wi_png_writer_error(png_structp png, png_const_charp message) {
    wi_png_writer *writer = (wi_png_writer *)png_get_error_ptr(png);
    snprintf(writer->message, writer->messageLength, "%s", message ? message : "unknown libpng error");
    longjmp(writer->jump, 1);
}

static void wi_png_writer_write(png_structp png, png_bytep data, png_size_t count) {
    wi_png_writer *writer = (wi_png_writer *)png_get_io_ptr(png);
    if (count > writer->capacity - writer->length) {
        size_t capacity = writer->capacity ? writer->capacity : 4096;
        while (count > capacity - writer->length) {
            if (capacity > SIZE_MAX / 2) png_error(png, "PNG output too large");
            capacity *= 2;
        }
        uint8_t *grown = realloc(writer->bytes, capacity);
        if (!grown) png_error(png, "out of memory writing PNG");
        writer->bytes = grown;
        writer->capacity = capacity;
    }
    memcpy(writer->bytes + writer->length, data, count);
    writer->length += count;
}

static void wi_png_writer_flush(png_structp png) { (void)png; }

// RGBA rows of `depth` (8 or 16, native byte order) bits a sample, `stride` bytes apart.
static int wi_png_encode(const uint8_t *pixels, int depth, uint32_t width, uint32_t height, size_t stride,
                         int compressionLevel, const uint8_t *icc, uint32_t iccLength, const uint8_t *exif,
                         uint32_t exifLength, uint8_t **output,
                         size_t *length, char *message, size_t messageLength, int (*shouldStop)(void *),
                         void *stopContext) {
    *output = NULL;
    *length = 0;
    if (messageLength > 0) message[0] = 0;
    if (width == 0 || height == 0 || stride < (size_t)width * 4 * (size_t)(depth / 8)) {
        snprintf(message, messageLength, "invalid size %ux%u with %zu bytes per row", width, height, stride);
        return -1;
    }
    // Heap-allocated so nothing the callbacks change lives in a local that longjmp could roll back.
    wi_png_writer *writer = calloc(1, sizeof *writer);
    if (!writer) {
        snprintf(message, messageLength, "out of memory");
        return -1;
    }
    writer->message = message;
    writer->messageLength = messageLength;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, writer, wi_png_writer_error,
                                              wi_png_ignore_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        snprintf(message, messageLength, "out of memory creating the PNG writer");
        png_destroy_write_struct(&png, NULL);
        free(writer);
        return -1;
    }
    if (setjmp(writer->jump)) {
        png_destroy_write_struct(&png, &info);
        free(writer->bytes);
        free(writer);
        return -1;
    }
    png_set_write_fn(png, writer, wi_png_writer_write, wi_png_writer_flush);
    png_set_compression_level(png, compressionLevel < 0 ? 0 : (compressionLevel > 9 ? 9 : compressionLevel));
    png_set_IHDR(png, info, width, height, depth, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (icc && iccLength > 0) {
        // libpng checks the profile (its length field, an RGB colour space for RGBA) and reports a
        // profile it cannot use as an error, which reaches the caller through wi_png_writer_error.
        // Its comparison with the sRGB profiles it knows is skipped: it refuses a common one with
        // wrong tags as "known incorrect sRGB profile", a profile that decoders read (and that libpng
        // only warns about when reading), so a preserved profile from such a file could not be written.
#if defined(PNG_SKIP_sRGB_CHECK_PROFILE) && defined(PNG_SET_OPTION_SUPPORTED)
        png_set_option(png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
#endif
        png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc, iccLength);
    }
#if defined(PNG_eXIf_SUPPORTED)
    if (exif && exifLength > 0) png_set_eXIf_1(png, info, exifLength, (png_bytep)exif);
#endif
    png_write_info(png, info);
    // PNG stores 16-bit samples most significant byte first.
    if (depth == 16) {
        const uint16_t probe = 1;
        if (*(const uint8_t *)&probe == 1) png_set_swap(png);
    }
    for (uint32_t y = 0; y < height; y++) {
        if (shouldStop && y % 16 == 0 && shouldStop(stopContext)) {
            png_destroy_write_struct(&png, &info);
            free(writer->bytes);
            free(writer);
            snprintf(message, messageLength, "stopped");
            return -2;
        }
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * stride));
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    *output = writer->bytes;
    *length = writer->length;
    free(writer);
    return 0;
}

int wi_png_encode_rgba(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                       int compressionLevel, const uint8_t *icc, uint32_t iccLength, const uint8_t *exif,
                       uint32_t exifLength, uint8_t **output, size_t *length, char *message,
                       size_t messageLength, int (*shouldStop)(void *), void *stopContext) {
    return wi_png_encode(pixels, 8, width, height, stride, compressionLevel, icc, iccLength, exif, exifLength,
                         output, length, message, messageLength, shouldStop, stopContext);
}

int wi_png_encode_rgba16(const uint16_t *samples, uint32_t width, uint32_t height, size_t stride,
                         int compressionLevel, const uint8_t *icc, uint32_t iccLength, const uint8_t *exif,
                         uint32_t exifLength, uint8_t **output, size_t *length, char *message,
                         size_t messageLength, int (*shouldStop)(void *), void *stopContext) {
    return wi_png_encode((const uint8_t *)samples, 16, width, height, stride, compressionLevel, icc, iccLength,
                         exif, exifLength, output, length, message, messageLength, shouldStop, stopContext);
}

void wi_png_encode_free(uint8_t *buffer) { free(buffer); }
