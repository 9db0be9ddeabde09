#include "CBenchCurl.h"

#include <curl/curl.h>
#include <stdlib.h>

typedef struct {
    CURL *easy;
    uint64_t *bytes;
} slot;

static size_t count_bytes(char *data, size_t size, size_t count, void *userdata) {
    (void)data;
    *(uint64_t *)userdata += size * count;
    return size * count;
}

static int start_next(CURLM *multi, CURL *easy, const char *const *urls, size_t count, size_t *next) {
    if (*next >= count) return 0;
    curl_easy_setopt(easy, CURLOPT_URL, urls[(*next)++]);
    return curl_multi_add_handle(multi, easy) == CURLM_OK;
}

int wi_bench_curl_multi(const char *const *urls, size_t count, int parallel, wi_bench_curl_result *result) {
    result->transfers = result->failures = result->bytes = 0;
    if (parallel < 1) parallel = 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return -1;
    CURLM *multi = curl_multi_init();
    if (!multi) return -1;
    CURL **handles = calloc((size_t)parallel, sizeof(CURL *));
    if (!handles) {
        curl_multi_cleanup(multi);
        return -1;
    }
    size_t next = 0;
    int running = 0;
    for (int i = 0; i < parallel; i++) {
        handles[i] = curl_easy_init();
        if (!handles[i]) break;
        curl_easy_setopt(handles[i], CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(handles[i], CURLOPT_WRITEFUNCTION, count_bytes);
        curl_easy_setopt(handles[i], CURLOPT_WRITEDATA, &result->bytes);
        running += start_next(multi, handles[i], urls, count, &next);
    }
    while (running > 0) {
        int still = 0;
        curl_multi_perform(multi, &still);
        CURLMsg *message;
        int left = 0;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result == CURLE_OK && status == 200) {
                result->transfers++;
            } else {
                result->failures++;
            }
            curl_multi_remove_handle(multi, easy);
            running--;
            running += start_next(multi, easy, urls, count, &next);
        }
        if (running > 0) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    for (int i = 0; i < parallel; i++) {
        if (handles[i]) curl_easy_cleanup(handles[i]);
    }
    free(handles);
    curl_multi_cleanup(multi);
    return 0;
}
