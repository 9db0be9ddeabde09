// zlib (Debian's zlib1g-dev). Used only by LocalImageServer to produce gzip-encoded test bodies;
// zlib reports errors through return codes, so Swift calls it directly.
#ifndef WEBIMAGE_CZLIB_SHIM_H
#define WEBIMAGE_CZLIB_SHIM_H
#include <zlib.h>
#endif
