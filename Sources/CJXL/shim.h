// libjxl's decoder and encoder (Debian's libjxl-dev). Errors come back as status codes, never longjmp,
// so Swift calls it directly.
#ifndef WEBIMAGE_CJXL_SHIM_H
#define WEBIMAGE_CJXL_SHIM_H
#include <jxl/decode.h>

#endif
