#include "CPNG.h"
#include <png.h>

const char *wi_png_library_version(void) { return png_get_libpng_ver(NULL); }
