// Zstandard (Debian's libzstd-dev), for Parquet pages compressed with ZSTD. zstd reports errors
// through return codes (ZSTD_isError), so Swift calls it directly.
#ifndef WEBIMAGE_CZSTD_SHIM_H
#define WEBIMAGE_CZSTD_SHIM_H
#include <zstd.h>
#endif
