// Makes the colour-management fixtures that no stock tool writes, with LittleCMS and libjpeg-turbo:
//
//   display-p3.icc     a Display P3 profile (P3 primaries, D65, the sRGB tone curve)
//   cmyk-test.icc      a synthetic CMYK input profile (CMYK -> Lab through a 9-point CLUT with dot gain)
//   cmyk-plain.jpg     a CMYK JPEG without an Adobe marker (0 = no ink), cmyk-test.icc embedded
//   cmyk-adobe.jpg     the same pixels the way Photoshop writes them: Adobe APP14, inverted values
//
// The CMYK pixels are a smooth function of position, so 4x4 block means are well defined.
// Build and run: see make-fixtures.py (gcc ... -llcms2 -ljpeg).
#include <lcms2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

enum { WIDTH = 256, HEIGHT = 192 };

// The model behind cmyk-test.icc: naive subtractive mixing after a dot-gain curve, then sRGB -> Lab.
static cmsHTRANSFORM srgbToLab;

static int sampleCMYK(const cmsUInt16Number in[], cmsUInt16Number out[], void *cargo) {
    (void)cargo;
    double ink[4];
    for (int i = 0; i < 4; i++) {
        double v = in[i] / 65535.0;
        ink[i] = 1.0 - pow(1.0 - v, 1.6);  // dot gain: mid tones print darker
    }
    double rgb[3];
    for (int i = 0; i < 3; i++) rgb[i] = (1.0 - ink[i]) * (1.0 - ink[3]);
    cmsCIELab lab;
    cmsDoTransform(srgbToLab, rgb, &lab, 1);
    cmsFloat2LabEncoded(out, &lab);
    return 1;
}

static cmsHPROFILE makeCMYKProfile(void) {
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHPROFILE lab = cmsCreateLab4Profile(NULL);
    srgbToLab = cmsCreateTransform(srgb, TYPE_RGB_DBL, lab, TYPE_Lab_DBL, INTENT_PERCEPTUAL, 0);
    cmsHPROFILE profile = cmsCreateProfilePlaceholder(NULL);
    cmsSetProfileVersion(profile, 4.3);
    cmsSetDeviceClass(profile, cmsSigInputClass);
    cmsSetColorSpace(profile, cmsSigCmykData);
    cmsSetPCS(profile, cmsSigLabData);
    cmsPipeline *lut = cmsPipelineAlloc(NULL, 4, 3);
    cmsStage *clut = cmsStageAllocCLut16bit(NULL, 9, 4, 3, NULL);
    cmsStageSampleCLut16bit(clut, sampleCMYK, NULL, 0);
    // A-curves, CLUT, B-curves: the shortest stage list a v4 lutAtoBType takes.
    cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(NULL, 4, NULL));
    cmsPipelineInsertStage(lut, cmsAT_END, clut);
    cmsPipelineInsertStage(lut, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, NULL));
    cmsWriteTag(profile, cmsSigAToB0Tag, lut);
    cmsMLU *description = cmsMLUalloc(NULL, 1);
    cmsMLUsetASCII(description, "en", "US", "WebImage test CMYK (synthetic, dot gain 1.6)");
    cmsWriteTag(profile, cmsSigProfileDescriptionTag, description);
    cmsWriteTag(profile, cmsSigMediaWhitePointTag, cmsD50_XYZ());
    cmsMLUfree(description);
    cmsPipelineFree(lut);
    cmsDeleteTransform(srgbToLab);
    cmsCloseProfile(srgb);
    cmsCloseProfile(lab);
    return profile;
}

static cmsHPROFILE makeDisplayP3(void) {
    cmsCIExyY d65;
    cmsWhitePointFromTemp(&d65, 6504);
    d65.x = 0.3127; d65.y = 0.3290; d65.Y = 1.0;
    cmsCIExyYTRIPLE primaries = {{0.680, 0.320, 1.0}, {0.265, 0.690, 1.0}, {0.150, 0.060, 1.0}};
    // The sRGB curve: type 4 parametric curve.
    cmsFloat64Number parameters[5] = {2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045};
    cmsToneCurve *curve = cmsBuildParametricToneCurve(NULL, 4, parameters);
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE profile = cmsCreateRGBProfile(&d65, &primaries, curves);
    cmsMLU *description = cmsMLUalloc(NULL, 1);
    cmsMLUsetASCII(description, "en", "US", "Display P3 (WebImage test)");
    cmsWriteTag(profile, cmsSigProfileDescriptionTag, description);
    cmsMLUfree(description);
    cmsFreeToneCurve(curve);
    return profile;
}

static unsigned char *profileBytes(cmsHPROFILE profile, cmsUInt32Number *size) {
    if (!cmsSaveProfileToMem(profile, NULL, size) || *size == 0) { fprintf(stderr, "cannot save a profile\n"); exit(1); }
    unsigned char *bytes = malloc(*size);
    cmsSaveProfileToMem(profile, bytes, size);
    return bytes;
}

static void writeFile(const char *path, const unsigned char *bytes, size_t size) {
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(bytes, 1, size, file) != size) { perror(path); exit(1); }
    fclose(file);
}

static void writeCMYKJPEG(const char *path, const unsigned char *pixels, int adobe, const unsigned char *icc,
                          cmsUInt32Number iccSize) {
    FILE *file = fopen(path, "wb");
    if (!file) { perror(path); exit(1); }
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, file);
    cinfo.image_width = WIDTH;
    cinfo.image_height = HEIGHT;
    cinfo.input_components = 4;
    cinfo.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&cinfo);
    jpeg_set_colorspace(&cinfo, JCS_CMYK);
    cinfo.write_Adobe_marker = adobe ? TRUE : FALSE;
    cinfo.write_JFIF_header = FALSE;
    jpeg_set_quality(&cinfo, 95, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    jpeg_write_icc_profile(&cinfo, icc, iccSize);
    unsigned char row[WIDTH * 4];
    while (cinfo.next_scanline < HEIGHT) {
        const unsigned char *source = pixels + (size_t)cinfo.next_scanline * WIDTH * 4;
        for (int i = 0; i < WIDTH * 4; i++) row[i] = adobe ? (unsigned char)(255 - source[i]) : source[i];
        JSAMPROW rows[1] = {row};
        jpeg_write_scanlines(&cinfo, rows, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    fclose(file);
}

static void reportLCMSError(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context;
    fprintf(stderr, "LittleCMS error %u: %s\n", code, text);
    exit(1);
}

int main(int argc, char **argv) {
    cmsSetLogErrorHandler(reportLCMSError);
    if (argc != 2) { fprintf(stderr, "usage: %s OUTDIR\n", argv[0]); return 2; }
    char path[4096];
    cmsUInt32Number size;

    cmsHPROFILE p3 = makeDisplayP3();
    unsigned char *p3Bytes = profileBytes(p3, &size);
    snprintf(path, sizeof path, "%s/display-p3.icc", argv[1]);
    writeFile(path, p3Bytes, size);
    free(p3Bytes);
    cmsCloseProfile(p3);

    cmsHPROFILE cmyk = makeCMYKProfile();
    cmsUInt32Number cmykSize;
    unsigned char *cmykBytes = profileBytes(cmyk, &cmykSize);
    snprintf(path, sizeof path, "%s/cmyk-test.icc", argv[1]);
    writeFile(path, cmykBytes, cmykSize);
    cmsCloseProfile(cmyk);

    // Smooth ink ramps: cyan across, magenta down, yellow on the diagonal, black in a soft band.
    unsigned char *pixels = malloc(WIDTH * HEIGHT * 4);
    for (int y = 0; y < HEIGHT; y++) {
        for (int x = 0; x < WIDTH; x++) {
            unsigned char *p = pixels + ((size_t)y * WIDTH + x) * 4;
            p[0] = (unsigned char)(x * 255 / (WIDTH - 1));
            p[1] = (unsigned char)(y * 255 / (HEIGHT - 1));
            p[2] = (unsigned char)((x + y) * 255 / (WIDTH + HEIGHT - 2));
            double band = sin((double)y / HEIGHT * 3.14159265);
            p[3] = (unsigned char)(band * 90);
        }
    }
    snprintf(path, sizeof path, "%s/cmyk-plain.jpg", argv[1]);
    writeCMYKJPEG(path, pixels, 0, cmykBytes, cmykSize);
    snprintf(path, sizeof path, "%s/cmyk-adobe.jpg", argv[1]);
    writeCMYKJPEG(path, pixels, 1, cmykBytes, cmykSize);
    free(pixels);
    free(cmykBytes);
    return 0;
}
