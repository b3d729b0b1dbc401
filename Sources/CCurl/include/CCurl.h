// libcurl for the FTP handler, loaded when the first FTP transfer starts (dlopen) rather than linked: a
// process that never loads an ftp: URL does not map libcurl and the thirty libraries it needs (about 5 MiB
// of resident memory). Only libcurl's header is needed to build.
//
// Every libcurl function the handler calls has a `ccurl_` twin here that goes through the loaded table;
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call, so they get one typed
// twin per argument type.
#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

/// Loads libcurl once per process (`CCURL_LIBRARY` names another file to load, for tests) and runs
/// curl_global_init. Returns NULL when it is ready, else why it is not (a message that lives for the process).
const char *ccurl_load(void);

/// Names the calling thread (at most 15 bytes), for debuggers and `top -H`.
void ccurl_name_this_thread(const char *name);

CURL *ccurl_easy_init(void);
void ccurl_easy_cleanup(CURL *easy);
CURLcode ccurl_easy_pause(CURL *easy, int bitmask);
const char *ccurl_easy_strerror(CURLcode code);

CURLM *ccurl_multi_init(void);
CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *easy);
CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *easy);
CURLMcode ccurl_multi_perform(CURLM *multi, int *running);
CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *numfds);
CURLMcode ccurl_multi_wait(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *numfds);
CURLMcode ccurl_multi_wakeup(CURLM *multi);
/// Frees a multi handle that holds no easy handle any more.
CURLMcode ccurl_multi_cleanup(CURLM *multi);
/// Whether libcurl watches any socket now (`curl_multi_waitfds` from libcurl 8.8, else `curl_multi_fdset` where that
/// is safe; 1 when it cannot tell): with transfers running and none watched, libcurl waits on nothing a poll can see.
int ccurl_multi_watches_sockets(CURLM *multi);
CURLMsg *ccurl_multi_info_read(CURLM *multi, int *left);

/// A share handle whose transfers share one cache of connections and their TLS sessions
/// (`CURL_LOCK_DATA_CONNECT`, libcurl 7.57 or later; `CURL_LOCK_DATA_SSL_SESSION`), or NULL when libcurl cannot
/// make one. Not locked: its transfers must all run on one thread.
CURLSH *ccurl_share_connections(void);
/// Frees a share handle and closes the connections it keeps; `CURLSHE_IN_USE` while a handle still uses it.
/// Blocks: each FTP connection is sent `QUIT` and its reply awaited (up to libcurl's reply timeout, 120 s).
CURLSHcode ccurl_share_cleanup(CURLSH *share);

CURLcode ccurl_setopt_long(CURL *easy, CURLoption option, long value);
CURLcode ccurl_setopt_off(CURL *easy, CURLoption option, curl_off_t value);
CURLcode ccurl_setopt_pointer(CURL *easy, CURLoption option, void *value);
CURLcode ccurl_setopt_string(CURL *easy, CURLoption option, const char *value);
/// Sets a list option (CURLOPT_RESOLVE, CURLOPT_CONNECT_TO) to `lines`, copied into a list the caller frees with
/// `ccurl_list_free` once the handle is cleaned up (libcurl reads the list until then). `*list` is NULL when it fails.
CURLcode ccurl_setopt_lines(CURL *easy, CURLoption option, const char *const *lines, int count, struct curl_slist **list);
/// Frees a list made by `ccurl_setopt_lines` (NULL is fine).
void ccurl_list_free(struct curl_slist *list);
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *context);
CURLcode ccurl_setopt_data_callback(CURL *easy, CURLoption option, ccurl_data_callback callback);
typedef int (*ccurl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                       curl_off_t upload_total, curl_off_t uploaded);
CURLcode ccurl_setopt_progress_callback(CURL *easy, ccurl_progress_callback callback);
typedef int (*ccurl_debug_callback)(CURL *easy, curl_infotype type, char *data, size_t size, void *context);
/// Turns on CURLOPT_VERBOSE, its lines going to `callback` (CURLOPT_DEBUGFUNCTION) with `context` (CURLOPT_DEBUGDATA)
/// instead of standard error.
CURLcode ccurl_setopt_debug_callback(CURL *easy, ccurl_debug_callback callback, void *context);
CURLcode ccurl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value);
/// A string libcurl owns, valid until the handle is cleaned up (or NULL).
CURLcode ccurl_getinfo_string(CURL *easy, CURLINFO info, const char **value);
CURLcode ccurl_getinfo_long(CURL *easy, CURLINFO info, long *value);

#endif
