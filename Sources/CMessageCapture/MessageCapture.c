// See include/CMessageCapture.h for why this exists.
#define _GNU_SOURCE
#include "CMessageCapture.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kept_limit = 16 * 1024 };

// Per thread: how deep the begin/end calls are and the text kept so far (NULL until the first write).
static _Thread_local int capture_depth;
static _Thread_local char *kept_text;
static _Thread_local size_t kept_length;

static pthread_once_t route_once = PTHREAD_ONCE_INIT;
static int route_installed;

static ssize_t route_write(void *cookie, const char *buffer, size_t size) {
    (void)cookie;
    if (capture_depth > 0) {
        if (kept_text == NULL) {
            kept_text = malloc(kept_limit + 1);
            if (kept_text == NULL) return (ssize_t)size;
            kept_length = 0;
        }
        size_t room = kept_limit - kept_length;
        size_t count = size < room ? size : room;
        memcpy(kept_text + kept_length, buffer, count);
        kept_length += count;
        kept_text[kept_length] = '\0';
        return (ssize_t)size;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t written = write(STDERR_FILENO, buffer + done, size - done);
        if (written < 0) {
            if (errno == EINTR) continue;
            return done > 0 ? (ssize_t)done : -1;
        }
        done += (size_t)written;
    }
    return (ssize_t)size;
}

static void install_route(void) {
    cookie_io_functions_t functions = {.read = NULL, .write = route_write, .seek = NULL, .close = NULL};
    FILE *routed = fopencookie(NULL, "w", functions);
    if (routed == NULL) return;
    // Unbuffered, as stderr is: each fprintf reaches route_write whole, on the thread that made it.
    setvbuf(routed, NULL, _IONBF, 0);
    fflush(stderr);
    stderr = routed;
    route_installed = 1;
}

int wi_messages_begin(void) {
    pthread_once(&route_once, install_route);
    if (!route_installed) return 0;
    capture_depth += 1;
    return 1;
}

const char *wi_messages_text(void) { return kept_text != NULL ? kept_text : ""; }

void wi_messages_end(void) {
    if (capture_depth == 0) return;
    capture_depth -= 1;
    if (capture_depth == 0) {
        free(kept_text);
        kept_text = NULL;
        kept_length = 0;
    }
}
