// zlib (Debian's zlib1g-dev): the test server's gzip route, the gzip input of `webimage bulk`, Parquet
// pages compressed with GZIP and a PNG's compressed XMP packet. zlib reports errors through return codes,
// so Swift calls it directly.
#ifndef WEBIMAGE_CZLIB_SHIM_H
#define WEBIMAGE_CZLIB_SHIM_H
#include <zlib.h>
#endif
