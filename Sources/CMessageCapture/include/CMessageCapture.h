#ifndef WEBIMAGE_CMESSAGECAPTURE_H
#define WEBIMAGE_CMESSAGECAPTURE_H

#include <stddef.h>

/// Keeps what a C library prints to `stderr` off the terminal while this thread runs it.
///
/// Debian's libjxl prints a line for every check that fails inside a damaged file, through
/// `fprintf(stderr, ...)`; there is no switch for it. The first call replaces the process's `stderr`
/// stream (glibc lets a program assign it) with one that writes straight to file descriptor 2, as
/// before, except on a thread between `wi_messages_begin` and `wi_messages_end`: there the text is
/// kept (up to 16 KiB) for the caller, which logs it at debug level. Writes to file descriptor 2 that
/// do not go through `stderr` are untouched.

/// Starts keeping this thread's `stderr` text. Calls nest; only the outermost `wi_messages_end` stops.
/// Returns 0 when the routing stream could not be made (the text then goes to the terminal as before).
int wi_messages_begin(void);

/// The text kept since the outermost `wi_messages_begin` on this thread (NUL-terminated, empty when
/// none); valid until the next call on this thread.
const char *wi_messages_text(void);

/// Stops keeping (when this is the outermost call) and frees the text.
void wi_messages_end(void);

#endif
