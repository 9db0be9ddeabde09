// libjxl's decoder and encoder (Debian's libjxl-dev; both are in libjxl.so, which the module map links).
// Errors come back as status codes, never longjmp, so Swift calls it directly.
#ifndef WEBIMAGE_CJXL_SHIM_H
#define WEBIMAGE_CJXL_SHIM_H
#include <jxl/decode.h>
#include <jxl/encode.h>

#endif
