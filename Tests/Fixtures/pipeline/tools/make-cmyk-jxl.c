// Makes cmyk-alpha.jxl: a lossless CMYK JPEG XL with alpha, which no stock tool writes (cjxl reads no
// CMYK input). 64x48 pixels; the inks are a smooth function of position (see inks() below, which
// JXLCMYKDecodingTests repeats); cmyk-test.icc (made by make-colour-fixtures.c) is embedded.
//
// libjxl stores CMYK with 0 as full ink: the colour channels hold 255 - C, 255 - M, 255 - Y and the
// black (kBlack) extra channel 255 - K. Alpha is straight, 255 - x.
// Build and run: see make-fixtures.py (gcc ... -ljxl), after make-colour-fixtures.
#include <jxl/encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 64, HEIGHT = 48 };

static void inks(int x, int y, unsigned char out[4]) {
    out[0] = (unsigned char)(x * 4);          // C
    out[1] = (unsigned char)(y * 5);          // M
    out[2] = (unsigned char)(255 - x * 4);    // Y
    out[3] = (unsigned char)((x + y) * 2);    // K
}

static unsigned char *readFile(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)length);
    if (fread(data, 1, (size_t)length, file) != (size_t)length) { fclose(file); free(data); return NULL; }
    fclose(file);
    *size = (size_t)length;
    return data;
}

#define CHECK(call) do { if ((call) != JXL_ENC_SUCCESS) { fprintf(stderr, "%s failed\n", #call); return 1; } } while (0)

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s FOLDER\n", argv[0]); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/cmyk-test.icc", argv[1]);
    size_t iccSize = 0;
    unsigned char *icc = readFile(path, &iccSize);
    if (!icc) { fprintf(stderr, "cannot read %s\n", path); return 1; }

    static unsigned char colour[WIDTH * HEIGHT * 4], black[WIDTH * HEIGHT];
    for (int y = 0; y < HEIGHT; y++) {
        for (int x = 0; x < WIDTH; x++) {
            unsigned char ink[4];
            inks(x, y, ink);
            unsigned char *pixel = colour + (y * WIDTH + x) * 4;
            for (int c = 0; c < 3; c++) pixel[c] = (unsigned char)(255 - ink[c]);
            pixel[3] = (unsigned char)(255 - x);
            black[y * WIDTH + x] = (unsigned char)(255 - ink[3]);
        }
    }

    JxlEncoder *encoder = JxlEncoderCreate(NULL);
    CHECK(JxlEncoderSetCodestreamLevel(encoder, 10));  // CMYK needs level 10
    JxlBasicInfo info;
    JxlEncoderInitBasicInfo(&info);
    info.xsize = WIDTH;
    info.ysize = HEIGHT;
    info.bits_per_sample = 8;
    info.num_color_channels = 3;
    info.alpha_bits = 8;
    info.num_extra_channels = 2;  // 0: alpha, 1: black
    info.uses_original_profile = JXL_TRUE;
    CHECK(JxlEncoderSetBasicInfo(encoder, &info));
    JxlExtraChannelInfo channel;
    JxlEncoderInitExtraChannelInfo(JXL_CHANNEL_ALPHA, &channel);
    channel.bits_per_sample = 8;
    CHECK(JxlEncoderSetExtraChannelInfo(encoder, 0, &channel));
    JxlEncoderInitExtraChannelInfo(JXL_CHANNEL_BLACK, &channel);
    channel.bits_per_sample = 8;
    CHECK(JxlEncoderSetExtraChannelInfo(encoder, 1, &channel));
    CHECK(JxlEncoderSetICCProfile(encoder, icc, iccSize));

    JxlEncoderFrameSettings *settings = JxlEncoderFrameSettingsCreate(encoder, NULL);
    CHECK(JxlEncoderSetFrameLossless(settings, JXL_TRUE));
    JxlPixelFormat rgba = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    JxlPixelFormat gray = {1, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    CHECK(JxlEncoderAddImageFrame(settings, &rgba, colour, sizeof colour));
    CHECK(JxlEncoderSetExtraChannelBuffer(settings, &gray, black, sizeof black, 1));
    JxlEncoderCloseInput(encoder);

    size_t capacity = 1 << 20, used = 0;
    unsigned char *output = malloc(capacity);
    for (;;) {
        unsigned char *next = output + used;
        size_t available = capacity - used;
        JxlEncoderStatus status = JxlEncoderProcessOutput(encoder, &next, &available);
        used = (size_t)(next - output);
        if (status == JXL_ENC_SUCCESS) break;
        if (status != JXL_ENC_NEED_MORE_OUTPUT) { fprintf(stderr, "encoding failed\n"); return 1; }
        capacity *= 2;
        output = realloc(output, capacity);
    }
    JxlEncoderDestroy(encoder);
    snprintf(path, sizeof path, "%s/cmyk-alpha.jxl", argv[1]);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(output, 1, used, file) != used) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    fclose(file);
    free(output);
    free(icc);
    return 0;
}
