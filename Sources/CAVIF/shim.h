// libavif (Debian's libavif-dev, AV1 decoding through dav1d). libavif reports errors through return
// values, never longjmp, so Swift calls it directly.
#ifndef WEBIMAGE_CAVIF_SHIM_H
#define WEBIMAGE_CAVIF_SHIM_H
#include <avif/avif.h>

#endif
