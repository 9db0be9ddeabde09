// Baseline decoders and the encoders that make the benchmark's files: each library driven the simplest
// way it documents (TurboJPEG, libpng's simplified API, libwebp's one-call API). Not part of WebImage.
#include "CBenchCodecs.h"
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/encode.h>

// ---- libpng ----

int wi_bench_png_size(const uint8_t *data, size_t length, int *width, int *height) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) return -1;
    *width = (int)image.width;
    *height = (int)image.height;
    png_image_free(&image);
    return 0;
}

int wi_bench_png_decode(const uint8_t *data, size_t length, uint8_t *pixels, int width, int height) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) return -1;
    if ((int)image.width != width || (int)image.height != height) {
        png_image_free(&image);
        return -1;
    }
    image.format = PNG_FORMAT_RGBA;
    int ok = png_image_finish_read(&image, NULL, pixels, 0, NULL);
    png_image_free(&image);
    return ok ? 0 : -1;
}

int wi_bench_png_encode(const uint8_t *pixels, int width, int height, uint8_t **output, size_t *length) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    image.format = PNG_FORMAT_RGBA;
    png_alloc_size_t size = 0;
    if (!png_image_write_get_memory_size(image, size, 0, pixels, 0, NULL)) return -1;
    uint8_t *buffer = malloc(size);
    if (!buffer) return -1;
    if (!png_image_write_to_memory(&image, buffer, &size, 0, pixels, 0, NULL)) {
        free(buffer);
        return -1;
    }
    *output = buffer;
    *length = size;
    return 0;
}

void wi_bench_png_free(uint8_t *buffer) { free(buffer); }

// ---- TurboJPEG ----

int wi_bench_tj_size(const uint8_t *data, size_t length, int *width, int *height) {
    tjhandle handle = tjInitDecompress();
    if (!handle) return -1;
    int subsampling = 0, colorspace = 0;
    int result = tjDecompressHeader3(handle, data, (unsigned long)length, width, height, &subsampling, &colorspace);
    tjDestroy(handle);
    return result == 0 ? 0 : -1;
}

int wi_bench_tj_decode(const uint8_t *data, size_t length, uint8_t *pixels, int width, int height) {
    tjhandle handle = tjInitDecompress();
    if (!handle) return -1;
    int result = tjDecompress2(handle, data, (unsigned long)length, pixels, width, width * 4, height, TJPF_RGBA, 0);
    tjDestroy(handle);
    return result == 0 ? 0 : -1;
}

int wi_bench_tj_encode(const uint8_t *pixels, int width, int height, int quality, uint8_t **output,
                       size_t *length) {
    tjhandle handle = tjInitCompress();
    if (!handle) return -1;
    unsigned char *buffer = NULL;
    unsigned long size = 0;
    int result = tjCompress2(handle, pixels, width, width * 4, height, TJPF_RGBA, &buffer, &size, TJSAMP_420,
                             quality, 0);
    tjDestroy(handle);
    if (result != 0) {
        tjFree(buffer);
        return -1;
    }
    *output = buffer;
    *length = size;
    return 0;
}

void wi_bench_tj_free(uint8_t *buffer) { tjFree(buffer); }

// ---- libwebp ----

/// Decodes with libwebp's WebPDecodeRGBA (which allocates) and frees the result; 0 or -1.
int wi_bench_webp_decode(const uint8_t *_Nonnull data, size_t length, int *_Nonnull width,
                         int *_Nonnull height) {
    uint8_t *pixels = WebPDecodeRGBA(data, length, width, height);
    if (!pixels) return -1;
    WebPFree(pixels);
    return 0;
}

/// Encodes RGBA as lossy WebP; free `*output` with `wi_bench_webp_free`. 0 or -1.
int wi_bench_webp_encode(const uint8_t *_Nonnull pixels, int width, int height, float quality,
                         uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length) {
    uint8_t *buffer = NULL;
    size_t size = WebPEncodeRGBA(pixels, width, height, width * 4, quality, &buffer);
    if (size == 0) return -1;
    *output = buffer;
    *length = size;
    return 0;
}

/// Frees memory `wi_bench_webp_encode` returned.
void wi_bench_webp_free(uint8_t *_Nullable buffer) { WebPFree(buffer); }

// ---- AVIF and JPEG XL, called directly ----

#include <avif/avif.h>
#include <jxl/decode.h>

int wi_bench_avif_decode(const uint8_t *data, size_t length, int *width, int *height) {
    avifDecoder *decoder = avifDecoderCreate();
    if (!decoder) return -1;
    decoder->maxThreads = 1;
    int status = -1;
    if (avifDecoderSetIOMemory(decoder, data, length) == AVIF_RESULT_OK && avifDecoderParse(decoder) == AVIF_RESULT_OK &&
        avifDecoderNextImage(decoder) == AVIF_RESULT_OK) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, decoder->image);
        rgb.format = AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;
        *width = (int)rgb.width;
        *height = (int)rgb.height;
        rgb.rowBytes = rgb.width * 4;
        rgb.pixels = malloc((size_t)rgb.rowBytes * rgb.height);
        if (rgb.pixels && avifImageYUVToRGB(decoder->image, &rgb) == AVIF_RESULT_OK) status = 0;
        free(rgb.pixels);
    }
    avifDecoderDestroy(decoder);
    return status;
}

int wi_bench_jxl_decode(const uint8_t *data, size_t length, int *width, int *height) {
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    if (!decoder) return -1;
    int status = -1;
    uint8_t *pixels = NULL;
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    if (JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE) != JXL_DEC_SUCCESS) goto done;
    JxlDecoderSetInput(decoder, data, length);
    JxlDecoderCloseInput(decoder);
    for (;;) {
        JxlDecoderStatus event = JxlDecoderProcessInput(decoder);
        if (event == JXL_DEC_BASIC_INFO) {
            JxlBasicInfo info;
            if (JxlDecoderGetBasicInfo(decoder, &info) != JXL_DEC_SUCCESS) goto done;
            *width = (int)info.xsize;
            *height = (int)info.ysize;
        } else if (event == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t size = 0;
            if (JxlDecoderImageOutBufferSize(decoder, &format, &size) != JXL_DEC_SUCCESS) goto done;
            free(pixels);
            pixels = malloc(size);
            if (!pixels || JxlDecoderSetImageOutBuffer(decoder, &format, pixels, size) != JXL_DEC_SUCCESS) goto done;
        } else if (event == JXL_DEC_FULL_IMAGE) {
            continue;
        } else if (event == JXL_DEC_SUCCESS) {
            status = 0;
            break;
        } else {
            break;
        }
    }
done:
    free(pixels);
    JxlDecoderDestroy(decoder);
    return status;
}

// ---- HEIC: libheif called directly (HEVC through libde265; encoding through libheif's built-in x265) ----

#include <libheif/heif.h>

int wi_bench_heif_decode(const uint8_t *data, size_t length, int *width, int *height) {
    struct heif_context *context = heif_context_alloc();
    if (!context) return -1;
    int status = -1;
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    if (!options) goto done;
    options->convert_hdr_to_8bit = 1;
    if (heif_context_read_from_memory_without_copy(context, data, length, NULL).code != heif_error_Ok) goto done;
    if (heif_context_get_primary_image_handle(context, &handle).code != heif_error_Ok) goto done;
    if (heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options).code !=
        heif_error_Ok)
        goto done;
    int stride = 0;
    const uint8_t *pixels = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    *width = heif_image_get_width(image, heif_channel_interleaved);
    *height = heif_image_get_height(image, heif_channel_interleaved);
    if (pixels && stride >= *width * 4) status = 0;
done:
    if (image) heif_image_release(image);
    if (handle) heif_image_handle_release(handle);
    heif_decoding_options_free(options);
    heif_context_free(context);
    return status;
}

struct wi_bench_buffer {
    uint8_t *bytes;
    size_t length;
    size_t capacity;
};

static struct heif_error wi_bench_heif_write(struct heif_context *context, const void *data, size_t size,
                                             void *userdata) {
    (void)context;
    struct wi_bench_buffer *buffer = userdata;
    struct heif_error error = {heif_error_Ok, heif_suberror_Unspecified, "ok"};
    if (buffer->length + size > buffer->capacity) {
        size_t capacity = (buffer->length + size) * 2;
        uint8_t *bytes = realloc(buffer->bytes, capacity);
        if (!bytes) {
            error.code = heif_error_Encoding_error;
            error.message = "out of memory";
            return error;
        }
        buffer->bytes = bytes;
        buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->length, data, size);
    buffer->length += size;
    return error;
}

int wi_bench_heif_encode(const uint8_t *pixels, int width, int height, int quality, uint8_t **output,
                         size_t *length) {
    struct heif_context *context = heif_context_alloc();
    if (!context) return -1;
    int status = -1;
    struct heif_encoder *encoder = NULL;
    struct heif_image *image = NULL;
    struct wi_bench_buffer buffer = {NULL, 0, 0};
    if (heif_context_get_encoder_for_format(context, heif_compression_HEVC, &encoder).code != heif_error_Ok) goto done;
    if (heif_encoder_set_lossy_quality(encoder, quality).code != heif_error_Ok) goto done;
    // An opaque photo, as a camera stores it: RGB without an alpha plane (libheif converts it to 4:2:0 YCbCr).
    if (heif_image_create(width, height, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image).code !=
        heif_error_Ok)
        goto done;
    if (heif_image_add_plane(image, heif_channel_interleaved, width, height, 8).code != heif_error_Ok) goto done;
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
    if (!plane) goto done;
    for (int y = 0; y < height; y++) {
        const uint8_t *from = pixels + (size_t)y * (size_t)width * 4;
        uint8_t *to = plane + (size_t)y * (size_t)stride;
        for (int x = 0; x < width; x++) {
            to[x * 3] = from[x * 4];
            to[x * 3 + 1] = from[x * 4 + 1];
            to[x * 3 + 2] = from[x * 4 + 2];
        }
    }
    if (heif_context_encode_image(context, image, encoder, NULL, NULL).code != heif_error_Ok) goto done;
    struct heif_writer writer = {1, wi_bench_heif_write};
    if (heif_context_write(context, &writer, &buffer).code != heif_error_Ok) goto done;
    *output = buffer.bytes;
    *length = buffer.length;
    buffer.bytes = NULL;
    status = 0;
done:
    free(buffer.bytes);
    if (image) heif_image_release(image);
    if (encoder) heif_encoder_release(encoder);
    heif_context_free(context);
    return status;
}

void wi_bench_heif_free(uint8_t *buffer) { free(buffer); }

const char *wi_bench_heif_version(void) { return heif_get_version(); }
