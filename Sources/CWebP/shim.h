// libwebp, libwebpdemux and libwebpmux (Debian's libwebp-dev). None of them longjmps, so Swift calls them
// directly.
#ifndef WEBIMAGE_CWEBP_SHIM_H
#define WEBIMAGE_CWEBP_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

#endif
