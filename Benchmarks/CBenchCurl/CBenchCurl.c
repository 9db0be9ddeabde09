#include "CBenchCurl.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    CURL *easy;
    uint64_t *bytes;
    int store;
    unsigned char *body;  // with `store`: the current transfer's body
    size_t length;
    size_t capacity;
} slot;

static size_t receive(char *data, size_t size, size_t count, void *userdata) {
    slot *s = userdata;
    size_t n = size * count;
    *s->bytes += n;
    if (!s->store) return n;
    if (s->length + n > s->capacity) {
        curl_off_t expected = -1;
        curl_easy_getinfo(s->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected);
        size_t wanted = expected > 0 && (size_t)expected >= s->length + n ? (size_t)expected : 2 * (s->length + n);
        unsigned char *grown = realloc(s->body, wanted);
        if (!grown) return 0;
        s->body = grown;
        s->capacity = wanted;
    }
    memcpy(s->body + s->length, data, n);
    s->length += n;
    return n;
}

static void release_body(slot *s) {
    free(s->body);
    s->body = NULL;
    s->length = s->capacity = 0;
}

static int start_next(CURLM *multi, slot *s, const char *const *urls, size_t count, size_t *next) {
    if (*next >= count) return 0;
    curl_easy_setopt(s->easy, CURLOPT_URL, urls[(*next)++]);
    return curl_multi_add_handle(multi, s->easy) == CURLM_OK;
}

int wi_bench_curl_multi(const char *const *urls, size_t count, int parallel, int store, wi_bench_curl_result *result) {
    result->transfers = result->failures = result->bytes = 0;
    if (parallel < 1) parallel = 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return -1;
    CURLM *multi = curl_multi_init();
    if (!multi) return -1;
    slot *slots = calloc((size_t)parallel, sizeof(slot));
    if (!slots) {
        curl_multi_cleanup(multi);
        return -1;
    }
    size_t next = 0;
    int running = 0;
    for (int i = 0; i < parallel; i++) {
        slot *s = &slots[i];
        s->easy = curl_easy_init();
        if (!s->easy) break;
        s->bytes = &result->bytes;
        s->store = store;
        curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, receive);
        curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
        running += start_next(multi, s, urls, count, &next);
    }
    while (running > 0) {
        int still = 0;
        curl_multi_perform(multi, &still);
        CURLMsg *message;
        int left = 0;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            slot *s = NULL;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&s);
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result == CURLE_OK && status == 200) {
                result->transfers++;
            } else {
                result->failures++;
            }
            release_body(s);
            curl_multi_remove_handle(multi, easy);
            running--;
            running += start_next(multi, s, urls, count, &next);
        }
        if (running > 0) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    for (int i = 0; i < parallel; i++) {
        if (slots[i].easy) curl_easy_cleanup(slots[i].easy);
        release_body(&slots[i]);
    }
    free(slots);
    curl_multi_cleanup(multi);
    return 0;
}
