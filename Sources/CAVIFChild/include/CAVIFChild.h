// Runs one libavif encode in a child process that the caller can end: libavif 0.11 has no progress hook
// and no cancel call, so ending the process is the only way to stop an AV1 encode once it has started.
#ifndef WEBIMAGE_CAVIFCHILD_H
#define WEBIMAGE_CAVIFCHILD_H
#include <avif/avif.h>
#include <stddef.h>
#include <stdint.h>

/// Whether `wi_avif_encode_in_child` can run here: 0 in a ThreadSanitizer build, whose runtime does not
/// support a multi-threaded process forking a child that starts threads.
int wi_avif_child_encoding_available(void);

/// Forks; the child runs `avifEncoderWrite(encoder, image, …)` on its copy of the process and sends the
/// bytes back through a pipe, then leaves with `_exit`. The parent waits for them, and every 20 ms (and
/// whenever bytes arrive) calls `shouldStop(stopContext)`: when it returns non-zero, the child is killed
/// (SIGKILL), reaped, and the function returns -2. The child is always reaped before the function
/// returns, and it is killed too if the parent dies (PR_SET_PDEATHSIG).
///
/// An answer longer than `maximumBytes` is refused (the child is killed). On success returns 0 and sets
/// `*output` (free it with `wi_avif_child_free`) and `*length`; on failure returns -1 with a message.
///
/// The child calls only libavif, its codec and malloc, so the caller should have encoded once in process
/// beforehand: the codec's one-time set-up is then done, and the child never waits for a lock another
/// thread of the parent held at the fork.
int wi_avif_encode_in_child(avifEncoder *_Nonnull encoder, const avifImage *_Nonnull image, size_t maximumBytes,
                            int (*_Nonnull shouldStop)(void *_Nullable), void *_Nullable stopContext,
                            uint8_t *_Nullable *_Nonnull output, size_t *_Nonnull length, char *_Nonnull message,
                            size_t messageLength);

/// Frees memory `wi_avif_encode_in_child` returned.
void wi_avif_child_free(uint8_t *_Nullable buffer);

#endif
