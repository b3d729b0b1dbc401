#define _GNU_SOURCE  // secure_getenv, pthread_setname_np
#include "CCurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/select.h>

// The libcurl functions in use, filled by load() from the loaded library.
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_pause)(CURL *, int);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wait)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_fdset)(CURLM *, fd_set *, fd_set *, fd_set *, int *);
    // libcurl 8.8 or later only (NULL before): the watched sockets with no fd_set and no FD_SETSIZE limit.
    CURLMcode (*multi_waitfds)(CURLM *, struct curl_waitfd *, unsigned int, unsigned int *);
    // Whether curl_multi_fdset is safe to call: some versions write past an fd_set for a descriptor at or above
    // FD_SETSIZE (7.77-7.78, curl #7718; 8.12-8.17, curl PR #19439).
    int fdset_safe;
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
    CURLSHcode (*share_cleanup)(CURLSH *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure;
static char message[512];

static void *symbol(void *library, const char *name) {
    void *found = dlsym(library, name);
    if (found == NULL && failure == NULL) {
        snprintf(message, sizeof message, "libcurl has no %s (too old?)", name);
        failure = message;
    }
    return found;
}

static void load(void) {
    // Not honoured in a set-user-ID process: its environment is not to be trusted.
    const char *path = secure_getenv("CCURL_LIBRARY");
    if (path == NULL || *path == '\0') path = "libcurl.so.4";
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(message, sizeof message, "cannot load libcurl (install libcurl4): %s", why ? why : path);
        failure = message;
        return;
    }
    // Cast through void * one by one: ISO C has no conversion between object and function pointers.
    *(void **)&curl.global_init = symbol(library, "curl_global_init");
    *(void **)&curl.easy_init = symbol(library, "curl_easy_init");
    *(void **)&curl.easy_cleanup = symbol(library, "curl_easy_cleanup");
    *(void **)&curl.easy_pause = symbol(library, "curl_easy_pause");
    *(void **)&curl.easy_strerror = symbol(library, "curl_easy_strerror");
    *(void **)&curl.easy_setopt = symbol(library, "curl_easy_setopt");
    *(void **)&curl.easy_getinfo = symbol(library, "curl_easy_getinfo");
    *(void **)&curl.multi_init = symbol(library, "curl_multi_init");
    *(void **)&curl.multi_add_handle = symbol(library, "curl_multi_add_handle");
    *(void **)&curl.multi_remove_handle = symbol(library, "curl_multi_remove_handle");
    *(void **)&curl.multi_perform = symbol(library, "curl_multi_perform");
    *(void **)&curl.multi_poll = symbol(library, "curl_multi_poll");
    *(void **)&curl.multi_wait = symbol(library, "curl_multi_wait");
    *(void **)&curl.multi_wakeup = symbol(library, "curl_multi_wakeup");
    *(void **)&curl.multi_cleanup = symbol(library, "curl_multi_cleanup");
    *(void **)&curl.multi_fdset = symbol(library, "curl_multi_fdset");
    *(void **)&curl.multi_waitfds = dlsym(library, "curl_multi_waitfds");
    curl_version_info_data *(*version_info)(CURLversion) = NULL;
    *(void **)&version_info = dlsym(library, "curl_version_info");
    if (version_info != NULL) {
        unsigned int version = version_info(CURLVERSION_NOW)->version_num;
        curl.fdset_safe = (version >= 0x074F00 && version < 0x080C00) || version >= 0x081200;
    }
    *(void **)&curl.multi_info_read = symbol(library, "curl_multi_info_read");
    *(void **)&curl.share_init = symbol(library, "curl_share_init");
    *(void **)&curl.share_setopt = symbol(library, "curl_share_setopt");
    *(void **)&curl.share_cleanup = symbol(library, "curl_share_cleanup");
    *(void **)&curl.slist_append = symbol(library, "curl_slist_append");
    *(void **)&curl.slist_free_all = symbol(library, "curl_slist_free_all");
    if (failure != NULL) return;
    CURLcode code = curl.global_init(CURL_GLOBAL_ALL);
    if (code != CURLE_OK) {
        snprintf(message, sizeof message, "libcurl did not start: %s", curl.easy_strerror(code));
        failure = message;
    }
}

void ccurl_name_this_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

const char *ccurl_load(void) {
    pthread_once(&once, load);
    return failure;
}

// The twins below are called only after ccurl_load() returned NULL.

CURL *ccurl_easy_init(void) { return curl.easy_init(); }
void ccurl_easy_cleanup(CURL *easy) { curl.easy_cleanup(easy); }
CURLcode ccurl_easy_pause(CURL *easy, int bitmask) { return curl.easy_pause(easy, bitmask); }
const char *ccurl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }

CURLM *ccurl_multi_init(void) { return curl.multi_init(); }
CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *easy) { return curl.multi_add_handle(multi, easy); }
CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *easy) { return curl.multi_remove_handle(multi, easy); }
CURLMcode ccurl_multi_perform(CURLM *multi, int *running) { return curl.multi_perform(multi, running); }
CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *numfds) {
    return curl.multi_poll(multi, extra, count, timeout_ms, numfds);
}
CURLMcode ccurl_multi_wait(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *numfds) {
    return curl.multi_wait(multi, extra, count, timeout_ms, numfds);
}
CURLMcode ccurl_multi_wakeup(CURLM *multi) { return curl.multi_wakeup(multi); }
CURLMcode ccurl_multi_cleanup(CURLM *multi) { return curl.multi_cleanup(multi); }
int ccurl_multi_watches_sockets(CURLM *multi) {
    // Unknown counts as watching: the caller then sleeps as usual.
    if (curl.multi_waitfds != NULL) {
        unsigned int count = 0;
        CURLMcode code = curl.multi_waitfds(multi, NULL, 0, &count);
        return (code == CURLM_OK || code == CURLM_OUT_OF_MEMORY) ? count > 0 : 1;
    }
    if (!curl.fdset_safe) return 1;
    fd_set read, write, error;
    FD_ZERO(&read);
    FD_ZERO(&write);
    FD_ZERO(&error);
    int highest = -1;
    if (curl.multi_fdset(multi, &read, &write, &error, &highest) != CURLM_OK) return 1;
    // curl_multi_fdset leaves out sockets at or above FD_SETSIZE: once the process's descriptors have reached it
    // (descriptors are handed out lowest first), none reported tells nothing.
    if (highest < 0 && fcntl(FD_SETSIZE, F_GETFD) != -1) return 1;
    return highest >= 0;
}
CURLMsg *ccurl_multi_info_read(CURLM *multi, int *left) { return curl.multi_info_read(multi, left); }

CURLSH *ccurl_share_connections(void) {
    CURLSH *share = curl.share_init();
    if (share == NULL) return NULL;
    // No lock callbacks: the transfers that use a share run on one engine's thread, and their handles are freed
    // before the share is (on another thread, once none uses it).
    // TLS sessions too: a load on a kept FTPS control connection opens its data connection with the session the
    // control connection's handshake made, which servers such as vsftpd (require_ssl_reuse) insist on.
    // The name cache too: a load's CURLOPT_RESOLVE entries are kept there for good, and in the multi handle's own
    // cache they would route the engine's later loads of other sessions (the share's key holds the entries).
    if (curl.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
        curl.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK ||
        curl.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK) {
        curl.share_cleanup(share);
        return NULL;
    }
    return share;
}
CURLSHcode ccurl_share_cleanup(CURLSH *share) { return curl.share_cleanup(share); }

CURLcode ccurl_setopt_long(CURL *easy, CURLoption option, long value) { return curl.easy_setopt(easy, option, value); }
CURLcode ccurl_setopt_off(CURL *easy, CURLoption option, curl_off_t value) { return curl.easy_setopt(easy, option, value); }
CURLcode ccurl_setopt_pointer(CURL *easy, CURLoption option, void *value) { return curl.easy_setopt(easy, option, value); }
CURLcode ccurl_setopt_string(CURL *easy, CURLoption option, const char *value) { return curl.easy_setopt(easy, option, value); }
CURLcode ccurl_setopt_lines(CURL *easy, CURLoption option, const char *const *lines, int count, struct curl_slist **list) {
    *list = NULL;
    for (int index = 0; index < count; index++) {
        struct curl_slist *longer = curl.slist_append(*list, lines[index]);
        if (longer == NULL) {
            curl.slist_free_all(*list);
            *list = NULL;
            return CURLE_OUT_OF_MEMORY;
        }
        *list = longer;
    }
    return curl.easy_setopt(easy, option, *list);
}
void ccurl_list_free(struct curl_slist *list) {
    if (list != NULL) curl.slist_free_all(list);
}
CURLcode ccurl_setopt_data_callback(CURL *easy, CURLoption option, ccurl_data_callback callback) {
    return curl.easy_setopt(easy, option, callback);
}
CURLcode ccurl_setopt_progress_callback(CURL *easy, ccurl_progress_callback callback) {
    return curl.easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, callback);
}
CURLcode ccurl_setopt_debug_callback(CURL *easy, ccurl_debug_callback callback, void *context) {
    CURLcode code = curl.easy_setopt(easy, CURLOPT_DEBUGFUNCTION, callback);
    if (code == CURLE_OK) code = curl.easy_setopt(easy, CURLOPT_DEBUGDATA, context);
    if (code == CURLE_OK) code = curl.easy_setopt(easy, CURLOPT_VERBOSE, 1L);
    return code;
}
CURLcode ccurl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value) { return curl.easy_getinfo(easy, info, value); }
CURLcode ccurl_getinfo_string(CURL *easy, CURLINFO info, const char **value) { return curl.easy_getinfo(easy, info, value); }
CURLcode ccurl_getinfo_long(CURL *easy, CURLINFO info, long *value) { return curl.easy_getinfo(easy, info, value); }
