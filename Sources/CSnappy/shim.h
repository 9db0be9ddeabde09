// Snappy (Debian's libsnappy-dev) through its C API, for Parquet pages compressed with SNAPPY.
// snappy-c.h reports errors through return codes, so Swift calls it directly.
#ifndef WEBIMAGE_CSNAPPY_SHIM_H
#define WEBIMAGE_CSNAPPY_SHIM_H
#include <snappy-c.h>
#endif
