// SQLite 3 (Debian's libsqlite3-dev).
#ifndef WEBIMAGE_CSQLITE_SHIM_H
#define WEBIMAGE_CSQLITE_SHIM_H
#include <sqlite3.h>
// SQLITE_TRANSIENT is a cast macro Swift cannot import.
static inline void (*_Nonnull wi_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
#endif
