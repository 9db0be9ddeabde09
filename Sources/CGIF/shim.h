// giflib (Debian's libgif-dev ships no pkg-config file, so the module map links "gif" directly).
// giflib reports errors through return codes, so Swift calls it directly.
#ifndef WEBIMAGE_CGIF_SHIM_H
#define WEBIMAGE_CGIF_SHIM_H
#include <gif_lib.h>
#endif
