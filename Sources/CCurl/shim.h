// Typed wrappers for libcurl's variadic entry points.
//
// Swift cannot call C variadic functions (curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt,
// curl_share_setopt), so each argument kind gets one static inline function here. Keep this file
// free of logic: one call per function, the return code passed through unchanged.
#ifndef WEBIMAGE_CCURL_SHIM_H
#define WEBIMAGE_CCURL_SHIM_H

#include <curl/curl.h>
#include <signal.h>

#pragma clang assume_nonnull begin

// MARK: easy options

static inline CURLcode wi_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode wi_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode wi_easy_setopt_string(CURL *handle, CURLoption option, const char *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode wi_easy_setopt_pointer(CURL *handle, CURLoption option, void *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode wi_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode wi_easy_setopt_share(CURL *handle, CURLSH *_Nullable share) {
    return curl_easy_setopt(handle, CURLOPT_SHARE, share);
}

typedef size_t (*wi_data_callback)(char *_Nonnull ptr, size_t size, size_t count, void *_Nullable userdata);

static inline CURLcode wi_easy_setopt_write_function(CURL *handle, wi_data_callback _Nullable fn) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, fn);
}
static inline CURLcode wi_easy_setopt_header_function(CURL *handle, wi_data_callback _Nullable fn) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, fn);
}

// curl_opensocket_callback's type, with the nullability Swift needs to accept a closure for it.
typedef curl_socket_t (*wi_opensocket_callback)(void *_Nullable clientp, curlsocktype purpose,
                                                struct curl_sockaddr *address);

static inline CURLcode wi_easy_setopt_opensocket_function(CURL *handle, wi_opensocket_callback _Nullable fn) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, fn);
}
// curl_sockaddr.addr is declared a struct sockaddr (16 bytes) but holds addrlen bytes (a sockaddr_in6 for
// IPv6); Swift's copy of the field would hold only the declared 16, so the address is read through a pointer.
static inline const struct sockaddr *wi_curl_sockaddr_address(const struct curl_sockaddr *address) {
    return &address->addr;
}

// MARK: easy info

static inline CURLcode wi_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode wi_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode wi_easy_getinfo_string(CURL *handle, CURLINFO info, char *_Nullable *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode wi_easy_getinfo_slist(CURL *handle, CURLINFO info, struct curl_slist *_Nullable *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: multi and share options

static inline CURLMcode wi_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLSHcode wi_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

typedef void (*wi_share_lock_callback)(CURL *_Nullable handle, curl_lock_data data, curl_lock_access access,
                                       void *_Nullable userptr);
typedef void (*wi_share_unlock_callback)(CURL *_Nullable handle, curl_lock_data data, void *_Nullable userptr);

static inline CURLSHcode wi_share_setopt_lock(CURLSH *share, wi_share_lock_callback lock,
                                              wi_share_unlock_callback unlock, void *_Nullable userptr) {
    CURLSHcode code = curl_share_setopt(share, CURLSHOPT_LOCKFUNC, lock);
    if (code != CURLSHE_OK) return code;
    code = curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, unlock);
    if (code != CURLSHE_OK) return code;
    return curl_share_setopt(share, CURLSHOPT_USERDATA, userptr);
}

// MARK: message access
// CURLMsg.data is a union; Swift imports it awkwardly, so read the result code here.
static inline CURLcode wi_msg_result(const CURLMsg *msg) { return msg->data.result; }

// CURLAUTH_ANY is a macro built from a cast expression that Swift does not import.
static inline unsigned long wi_curlauth_any(void) { return CURLAUTH_ANY; }

// MARK: process set-up
// CURLVERSION_NOW is a macro over an enum value that Swift does not import.
static inline curl_version_info_data *_Nullable wi_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static inline void wi_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

#pragma clang assume_nonnull end

#endif
