#define _GNU_SOURCE
#include "CAVIFChild.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WI_AVIF_CHILD_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WI_AVIF_CHILD_UNDER_TSAN 1
#endif

int wi_avif_child_encoding_available(void) {
#ifdef WI_AVIF_CHILD_UNDER_TSAN
    return 0;
#else
    return 1;
#endif
}

// What the child sends before the encoded bytes.
struct wi_avif_child_header {
    int32_t result;
    uint64_t length;
};

static int wi_write_all(int fd, const void *bytes, size_t count) {
    const uint8_t *cursor = bytes;
    while (count > 0) {
        ssize_t written = write(fd, cursor, count);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        cursor += written;
        count -= (size_t)written;
    }
    return 0;
}

static void wi_avif_child_run(int fd, pid_t parent, avifEncoder *encoder, const avifImage *image) {
    // Dies with the parent; and if the parent died before the line above took effect, leaves now.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    avifRWData data = {0};
    struct wi_avif_child_header header = {0, 0};
    header.result = (int32_t)avifEncoderWrite(encoder, image, &data);
    if (header.result == AVIF_RESULT_OK) header.length = data.size;
    if (wi_write_all(fd, &header, sizeof header) != 0) _exit(4);
    if (header.length > 0 && wi_write_all(fd, data.data, data.size) != 0) _exit(4);
    // _exit: no atexit handlers and no stdio flushing, which belong to the parent.
    _exit(0);
}

static void wi_avif_child_reap(pid_t child, int kill_first) {
    if (kill_first) kill(child, SIGKILL);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
}

int wi_avif_encode_in_child(avifEncoder *encoder, const avifImage *image, size_t maximumBytes,
                            int (*shouldStop)(void *), void *stopContext, uint8_t **output, size_t *length,
                            char *message, size_t messageLength) {
    *output = NULL;
    *length = 0;
    if (messageLength > 0) message[0] = 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(message, messageLength, "cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        snprintf(message, messageLength, "cannot start the encoding process: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (child == 0) {
        close(fds[0]);
        wi_avif_child_run(fds[1], parent, encoder, image);
    }
    close(fds[1]);
    struct wi_avif_child_header header;
    size_t headerRead = 0;
    uint8_t *bytes = NULL;
    size_t bytesRead = 0;
    int status = -1;
    for (;;) {
        if (shouldStop(stopContext)) {
            snprintf(message, messageLength, "stopped");
            status = -2;
            break;
        }
        struct pollfd readable = {.fd = fds[0], .events = POLLIN};
        int ready = poll(&readable, 1, 20);
        if (ready < 0 && errno != EINTR) {
            snprintf(message, messageLength, "waiting for the encoding process failed: %s", strerror(errno));
            break;
        }
        if (ready <= 0) continue;
        uint8_t *target;
        size_t wanted;
        if (headerRead < sizeof header) {
            target = (uint8_t *)&header + headerRead;
            wanted = sizeof header - headerRead;
        } else {
            target = bytes + bytesRead;
            wanted = (size_t)header.length - bytesRead;
        }
        ssize_t got = read(fds[0], target, wanted);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            snprintf(message, messageLength, "the encoding process ended without an answer");
            break;
        }
        if (headerRead < sizeof header) {
            headerRead += (size_t)got;
            if (headerRead < sizeof header) continue;
            if (header.result != AVIF_RESULT_OK) {
                snprintf(message, messageLength, "%s", avifResultToString((avifResult)header.result));
                break;
            }
            if (header.length == 0 || header.length > maximumBytes) {
                snprintf(message, messageLength, "the encoding process answered %llu bytes, outside 1…%zu",
                         (unsigned long long)header.length, maximumBytes);
                break;
            }
            bytes = malloc((size_t)header.length);
            if (!bytes) {
                snprintf(message, messageLength, "out of memory");
                break;
            }
            continue;
        }
        bytesRead += (size_t)got;
        if (bytesRead == header.length) {
            status = 0;
            break;
        }
    }
    close(fds[0]);
    // Killed unless it answered in full: a child that did has only `_exit` left to do.
    wi_avif_child_reap(child, status != 0);
    if (status != 0) {
        free(bytes);
        return status;
    }
    *output = bytes;
    *length = bytesRead;
    return 0;
}

void wi_avif_child_free(uint8_t *buffer) { free(buffer); }
