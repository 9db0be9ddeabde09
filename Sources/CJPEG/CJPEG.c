#include "CJPEG.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

int wi_jpeg_library_version(void) {
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
    return LIBJPEG_TURBO_VERSION_NUMBER;
#else
    return JPEG_LIB_VERSION * 1000;
#endif
}

// A file with thousands of tiny progressive scans makes libjpeg spin for minutes (libjpeg-turbo's
// documented denial-of-service case); real encoders write at most a few dozen.
#define WI_JPEG_MAX_SCANS 1000
// libjpeg's own working memory (coefficient buffers of progressive files) beyond the output bitmap.
#define WI_JPEG_MAX_MEMORY (1024L * 1024L * 1024L)

struct wi_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr err;
    struct jpeg_progress_mgr progress;
    jmp_buf jump;
    const uint8_t *data;
    size_t length;
    int headerRead;
    int truncated;
    int rowsDecoded;
    int rawCMYK;
    char message[JMSG_LENGTH_MAX + 32];
};

static void wi_jpeg_error_exit(j_common_ptr cinfo) {
    wi_jpeg_decoder *decoder = (wi_jpeg_decoder *)cinfo->client_data;
    (*cinfo->err->format_message)(cinfo, decoder->message);
    longjmp(decoder->jump, 1);
}

static void wi_jpeg_emit_message(j_common_ptr cinfo, int level) {
    wi_jpeg_decoder *decoder = (wi_jpeg_decoder *)cinfo->client_data;
    // Warnings (level -1) are corrupt or missing data that libjpeg decodes around; only the end of
    // input matters to us: it makes the image partial.
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) decoder->truncated = 1;
}

static void wi_jpeg_progress(j_common_ptr cinfo) {
    wi_jpeg_decoder *decoder = (wi_jpeg_decoder *)cinfo->client_data;
    if (decoder->cinfo.input_scan_number > WI_JPEG_MAX_SCANS) {
        snprintf(decoder->message, sizeof decoder->message, "more than %d progressive scans", WI_JPEG_MAX_SCANS);
        longjmp(decoder->jump, 1);
    }
}

wi_jpeg_decoder *wi_jpeg_create(const uint8_t *data, size_t length) {
    wi_jpeg_decoder *decoder = calloc(1, sizeof *decoder);
    if (!decoder) return NULL;
    decoder->data = data;
    decoder->length = length;
    decoder->cinfo.err = jpeg_std_error(&decoder->err);
    decoder->err.error_exit = wi_jpeg_error_exit;
    decoder->err.emit_message = wi_jpeg_emit_message;
    decoder->cinfo.client_data = decoder;
    if (setjmp(decoder->jump)) {
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->cinfo);
    decoder->cinfo.mem->max_memory_to_use = WI_JPEG_MAX_MEMORY;
    decoder->progress.progress_monitor = wi_jpeg_progress;
    decoder->cinfo.progress = &decoder->progress;
    jpeg_mem_src(&decoder->cinfo, data, (unsigned long)length);
    // APP2 holds the ICC profile (in up to 255 chunks); libjpeg-turbo reassembles it.
    jpeg_save_markers(&decoder->cinfo, JPEG_APP0 + 2, 0xFFFF);
    return decoder;
}

void wi_jpeg_destroy(wi_jpeg_decoder *decoder) {
    if (!decoder) return;
    jpeg_destroy_decompress(&decoder->cinfo);
    free(decoder);
}

int wi_jpeg_read_header(wi_jpeg_decoder *decoder, wi_jpeg_header *header) {
    if (setjmp(decoder->jump)) return -1;
    if (jpeg_read_header(&decoder->cinfo, TRUE) != JPEG_HEADER_OK) {
        snprintf(decoder->message, sizeof decoder->message, "no image in the JPEG data");
        return -1;
    }
    decoder->headerRead = 1;
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    header->width = (int)cinfo->image_width;
    header->height = (int)cinfo->image_height;
    header->components = cinfo->num_components;
    header->progressive = cinfo->progressive_mode ? 1 : 0;
    header->adobeMarker = cinfo->saw_Adobe_marker ? 1 : 0;
    switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE: header->colorSpace = WI_JPEG_GRAY; break;
    case JCS_CMYK:
    case JCS_YCCK: header->colorSpace = WI_JPEG_CMYK; break;
    case JCS_RGB:
    case JCS_YCbCr: header->colorSpace = WI_JPEG_RGB; break;
    default:
        snprintf(decoder->message, sizeof decoder->message, "unsupported JPEG color space %d",
                 (int)cinfo->jpeg_color_space);
        return -1;
    }
    return 0;
}

static void wi_jpeg_configure(wi_jpeg_decoder *decoder, int denominator) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)denominator;
    int cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_EXT_RGBA;
}

int wi_jpeg_scaled_size(wi_jpeg_decoder *decoder, int denominator, int *width, int *height) {
    if (!decoder->headerRead) return -1;
    if (setjmp(decoder->jump)) return -1;
    wi_jpeg_configure(decoder, denominator);
    jpeg_calc_output_dimensions(&decoder->cinfo);
    *width = (int)decoder->cinfo.output_width;
    *height = (int)decoder->cinfo.output_height;
    return 0;
}

// Photoshop writes Adobe CMYK JPEGs inverted (255 = no ink); plain CMYK stores ink amounts.
static void wi_jpeg_cmyk_to_rgba(const uint8_t *cmyk, uint8_t *rgba, int width, int inverted) {
    for (int x = 0; x < width; x++) {
        unsigned c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
        if (!inverted) {
            c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k;
        }
        rgba[0] = (uint8_t)((c * k + 127) / 255);
        rgba[1] = (uint8_t)((m * k + 127) / 255);
        rgba[2] = (uint8_t)((y * k + 127) / 255);
        rgba[3] = 255;
        cmyk += 4;
        rgba += 4;
    }
}

static void wi_jpeg_zero_rows(uint8_t *pixels, size_t stride, int from, int height) {
    if (from < height) memset(pixels + (size_t)from * stride, 0, (size_t)(height - from) * stride);
}

int wi_jpeg_decode(wi_jpeg_decoder *decoder, int denominator, uint8_t *pixels, size_t stride, int width,
                   int height, int *rowsDecoded) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    decoder->rowsDecoded = 0;
    *rowsDecoded = 0;
    if (!decoder->headerRead) {
        wi_jpeg_zero_rows(pixels, stride, 0, height);
        return -1;
    }
    // volatile: it is assigned after setjmp and read after the longjmp back to it.
    uint8_t *volatile cmykRow = NULL;
    if (setjmp(decoder->jump)) {
        free(cmykRow);
        wi_jpeg_zero_rows(pixels, stride, decoder->rowsDecoded, height);
        *rowsDecoded = decoder->rowsDecoded;
        return -1;
    }
    wi_jpeg_configure(decoder, denominator);
    jpeg_start_decompress(cinfo);
    if ((int)cinfo->output_width != width || (int)cinfo->output_height != height) {
        snprintf(decoder->message, sizeof decoder->message, "JPEG output size changed while decoding");
        longjmp(decoder->jump, 1);
    }
    int cmyk = cinfo->out_color_space == JCS_CMYK;
    if (cmyk) {
        cmykRow = malloc((size_t)width * 4);
        if (!cmykRow) {
            snprintf(decoder->message, sizeof decoder->message, "out of memory");
            longjmp(decoder->jump, 1);
        }
    }
    while (cinfo->output_scanline < cinfo->output_height) {
        int y = (int)cinfo->output_scanline;
        if (cmyk) {
            JSAMPROW row = cmykRow;
            if (jpeg_read_scanlines(cinfo, &row, 1) != 1) break;
            if (decoder->rawCMYK) {
                // Ink amounts (0 = none), whatever the file's convention, for a colour-managed conversion.
                uint8_t *out = pixels + (size_t)y * stride;
                for (int i = 0; i < width * 4; i++) {
                    out[i] = cinfo->saw_Adobe_marker ? (uint8_t)(255 - cmykRow[i]) : cmykRow[i];
                }
            } else {
                wi_jpeg_cmyk_to_rgba(cmykRow, pixels + (size_t)y * stride, width, cinfo->saw_Adobe_marker);
            }
        } else {
            JSAMPROW rows[16];
            int count = height - y < 16 ? height - y : 16;
            for (int i = 0; i < count; i++) rows[i] = pixels + (size_t)(y + i) * stride;
            if (jpeg_read_scanlines(cinfo, rows, (JDIMENSION)count) == 0) break;
        }
        decoder->rowsDecoded = (int)cinfo->output_scanline;
        // A single-scan file decodes as it reads: once its data has ended, every later row is libjpeg's
        // gray filler, so producing them would only turn a few bytes into a full image's work. (A
        // multi-scan file read all its data in jpeg_start_decompress; its later rows hold earlier scans.)
        if (decoder->truncated && !jpeg_has_multiple_scans(cinfo)) break;
    }
    free(cmykRow);
    cmykRow = NULL;
    wi_jpeg_zero_rows(pixels, stride, decoder->rowsDecoded, height);
    *rowsDecoded = decoder->rowsDecoded;
    // Corrupt or truncated data has been decoded around already; what is left of the stream does not
    // change the pixels, so it is not read.
    jpeg_abort_decompress(cinfo);
    return 0;
}

int wi_jpeg_was_truncated(const wi_jpeg_decoder *decoder) { return decoder->truncated; }

int wi_jpeg_icc_profile(wi_jpeg_decoder *decoder, uint8_t **profile, unsigned int *length) {
    *profile = NULL;
    *length = 0;
    if (!decoder->headerRead) return -1;
    if (setjmp(decoder->jump)) return -1;
    JOCTET *data = NULL;
    unsigned int size = 0;
    if (!jpeg_read_icc_profile(&decoder->cinfo, &data, &size)) return 0;
    *profile = data;
    *length = size;
    return 1;
}

void wi_jpeg_free(void *memory) { free(memory); }

void wi_jpeg_set_raw_cmyk(wi_jpeg_decoder *decoder, int raw) { decoder->rawCMYK = raw; }

const char *wi_jpeg_error_message(const wi_jpeg_decoder *decoder) { return decoder->message; }

// ---- Encoding ----

struct wi_jpeg_encoder_error {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
    size_t messageLength;
};

// A destination that grows one malloc'd buffer; `base` is first, so `cinfo->dest` points at the whole.
struct wi_jpeg_memory_destination {
    struct jpeg_destination_mgr base;
    unsigned char *buffer;
    size_t capacity;
    size_t size;
};

static void wi_jpeg_memory_init(j_compress_ptr cinfo) {
    struct wi_jpeg_memory_destination *memory = (struct wi_jpeg_memory_destination *)cinfo->dest;
    memory->capacity = 65536;
    memory->buffer = malloc(memory->capacity);
    if (!memory->buffer) ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
    memory->base.next_output_byte = memory->buffer;
    memory->base.free_in_buffer = memory->capacity;
}

static boolean wi_jpeg_memory_grow(j_compress_ptr cinfo) {
    struct wi_jpeg_memory_destination *memory = (struct wi_jpeg_memory_destination *)cinfo->dest;
    // libjpeg calls this when the whole buffer is full.
    size_t grown = memory->capacity * 2;
    unsigned char *buffer = grown > memory->capacity ? realloc(memory->buffer, grown) : NULL;
    if (!buffer) ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
    memory->buffer = buffer;
    memory->base.next_output_byte = buffer + memory->capacity;
    memory->base.free_in_buffer = grown - memory->capacity;
    memory->capacity = grown;
    return TRUE;
}

static void wi_jpeg_memory_term(j_compress_ptr cinfo) {
    struct wi_jpeg_memory_destination *memory = (struct wi_jpeg_memory_destination *)cinfo->dest;
    memory->size = memory->capacity - memory->base.free_in_buffer;
}

// The progress monitor with what it asks; `cinfo->progress` points at `base`, the first member.
struct wi_jpeg_encoder_progress {
    struct jpeg_progress_mgr base;
    int (*shouldStop)(void *);
    void *context;
    struct wi_jpeg_encoder_error *error;
};

static void wi_jpeg_encode_progress(j_common_ptr cinfo) {
    struct wi_jpeg_encoder_progress *progress = (struct wi_jpeg_encoder_progress *)cinfo->progress;
    // libjpeg calls the monitor between units of work, where abandoning the encode through the error
    // path's jump is as safe as an error: the jump target destroys the compressor.
    if (progress->shouldStop(progress->context)) longjmp(progress->error->jump, 2);
}

static void wi_jpeg_encode_error_exit(j_common_ptr cinfo) {
    struct wi_jpeg_encoder_error *error = (struct wi_jpeg_encoder_error *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    snprintf(error->message, error->messageLength, "%s", text);
    longjmp(error->jump, 1);
}

static void wi_jpeg_encode_ignore_message(j_common_ptr cinfo, int level) {
    (void)cinfo;
    (void)level;
}

int wi_jpeg_encode_rgbx(const uint8_t *pixels, int width, int height, size_t stride, int quality, int progressive,
                        int subsampling444, int optimizeCoding, const uint8_t *icc, size_t iccLength, const uint8_t *exif,
                        size_t exifLength, uint8_t **output, size_t *length, char *message, size_t messageLength,
                        int (*shouldStop)(void *), void *stopContext) {
    struct jpeg_compress_struct cinfo;
    struct wi_jpeg_encoder_error error;
    struct wi_jpeg_encoder_progress progress = {.shouldStop = shouldStop, .context = stopContext, .error = &error};
    progress.base.progress_monitor = wi_jpeg_encode_progress;
    // The output grows in a buffer of our own (not libjpeg's memory destination, whose buffer pointer is
    // only current after jpeg_finish_compress, so an abandoned encode could not free it). Allocated before
    // setjmp, so the error path frees whatever buffer exists by then.
    struct wi_jpeg_memory_destination *memory = calloc(1, sizeof *memory);
    *output = NULL;
    *length = 0;
    if (messageLength > 0) message[0] = 0;
    error.message = message;
    error.messageLength = messageLength;
    cinfo.err = jpeg_std_error(&error.base);
    error.base.error_exit = wi_jpeg_encode_error_exit;
    error.base.emit_message = wi_jpeg_encode_ignore_message;
    if (!memory) {
        snprintf(message, messageLength, "out of memory");
        return -1;
    }
    int jumped = setjmp(error.jump);
    if (jumped) {
        jpeg_destroy_compress(&cinfo);
        free(memory->buffer);
        free(memory);
        if (jumped == 2) snprintf(message, messageLength, "stopped");
        return jumped == 2 ? -2 : -1;
    }
    jpeg_create_compress(&cinfo);
    if (shouldStop) cinfo.progress = &progress.base;
    memory->base.init_destination = wi_jpeg_memory_init;
    memory->base.empty_output_buffer = wi_jpeg_memory_grow;
    memory->base.term_destination = wi_jpeg_memory_term;
    cinfo.dest = &memory->base;
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 4;
    cinfo.in_color_space = JCS_EXT_RGBX;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    // libjpeg's defaults are 2x2 (4:2:0) for luma; 4:4:4 samples chroma at full resolution too.
    int factor = subsampling444 ? 1 : 2;
    cinfo.comp_info[0].h_samp_factor = factor;
    cinfo.comp_info[0].v_samp_factor = factor;
    cinfo.comp_info[1].h_samp_factor = cinfo.comp_info[1].v_samp_factor = 1;
    cinfo.comp_info[2].h_samp_factor = cinfo.comp_info[2].v_samp_factor = 1;
    cinfo.optimize_coding = optimizeCoding || progressive ? TRUE : FALSE;
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    if (exif && exifLength > 0 && exifLength <= 65533) jpeg_write_marker(&cinfo, JPEG_APP0 + 1, exif, (unsigned)exifLength);
    if (icc && iccLength > 0) jpeg_write_icc_profile(&cinfo, icc, (unsigned)iccLength);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *output = memory->buffer;
    *length = memory->size;
    free(memory);
    return 0;
}
