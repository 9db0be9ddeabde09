// The benchmark's physical limit: a minimal in-process libcurl multi client. It keeps `parallel`
// easy handles busy over one multi handle, reuses each handle (and its connection) for the next URL,
// and only counts body bytes. Nothing else happens per transfer, so its cost is libcurl's own.
#ifndef WEBIMAGE_CBENCHCURL_H
#define WEBIMAGE_CBENCHCURL_H
#include <stddef.h>
#include <stdint.h>

#pragma clang assume_nonnull begin

/// What one run transferred.
typedef struct {
    uint64_t transfers;  // transfers that completed with CURLE_OK and HTTP 200
    uint64_t failures;   // every other completion
    uint64_t bytes;      // body bytes received
} wi_bench_curl_result;

/// Downloads `urls[0..<count]` with at most `parallel` transfers at once. With `store` 0 the body bytes
/// are only counted; with `store` 1 each body is copied into a malloc'd buffer sized from Content-Length
/// (the least a client that hands the bytes to its caller must do), freed when the transfer completes.
/// Returns 0, or -1 when curl could not be set up.
int wi_bench_curl_multi(const char *_Nonnull const *_Nonnull urls, size_t count, int parallel, int store,
                        wi_bench_curl_result *result);

#pragma clang assume_nonnull end
#endif
