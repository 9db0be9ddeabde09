// libpng. libpng reports fatal errors with longjmp, which must never cross a Swift frame, so every
// call that can fail goes through the C functions declared here (implemented in CPNG.c).
#ifndef WEBIMAGE_CPNG_H
#define WEBIMAGE_CPNG_H
#include <stddef.h>
/// The libpng version string of the linked library, e.g. "1.6.39".
const char *_Nonnull wi_png_library_version(void);
#endif
