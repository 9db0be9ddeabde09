#include "CJPEG.h"
#include <stdio.h>
#include <jpeglib.h>
#include <turbojpeg.h>

int wi_jpeg_library_version(void) {
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
    return LIBJPEG_TURBO_VERSION_NUMBER;
#else
    return JPEG_LIB_VERSION * 1000;
#endif
}
