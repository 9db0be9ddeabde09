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
