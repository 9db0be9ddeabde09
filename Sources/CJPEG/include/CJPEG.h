// libjpeg-turbo. libjpeg reports fatal errors with longjmp, which must never cross a Swift frame, so
// every call that can fail goes through the C functions declared here (implemented in CJPEG.c).
#ifndef WEBIMAGE_CJPEG_H
#define WEBIMAGE_CJPEG_H
#include <stddef.h>
/// libjpeg-turbo's version, e.g. 2001005 for 2.1.5.
int wi_jpeg_library_version(void);
#endif
