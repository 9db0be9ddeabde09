// libheif (Debian's libheif-dev 1.15, HEVC through libde265). libheif reports errors through returned
// `heif_error` values, never longjmp, so Swift calls it directly.
#ifndef WEBIMAGE_CHEIF_SHIM_H
#define WEBIMAGE_CHEIF_SHIM_H
#include <libheif/heif.h>

#endif
