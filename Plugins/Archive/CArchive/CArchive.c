#define _GNU_SOURCE  // secure_getenv
#include "CArchive.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// The libarchive functions in use, filled by load() from the loaded library.
static struct {
    struct archive *(*read_new)(void);
    int (*read_free)(struct archive *);
    int (*read_support_filter_gzip)(struct archive *);
    int (*read_support_filter_bzip2)(struct archive *);
    int (*read_support_filter_xz)(struct archive *);
    int (*read_support_filter_lzma)(struct archive *);
    int (*read_support_filter_zstd)(struct archive *);
    int (*read_support_filter_lz4)(struct archive *);
    int (*read_support_filter_compress)(struct archive *);
    int (*read_support_format_all)(struct archive *);
    int (*read_open_fd)(struct archive *, int, size_t);
    int (*read_next_header)(struct archive *, struct archive_entry **);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    int (*format)(struct archive *);
    int (*errno_of)(struct archive *);
    const char *(*error_string)(struct archive *);
    const char *(*entry_pathname)(struct archive_entry *);
    const char *(*entry_pathname_utf8)(struct archive_entry *);
    const char *(*entry_hardlink)(struct archive_entry *);
    const char *(*entry_hardlink_utf8)(struct archive_entry *);
    const char *(*entry_symlink)(struct archive_entry *);
    const char *(*entry_symlink_utf8)(struct archive_entry *);
    __LA_MODE_T (*entry_filetype)(struct archive_entry *);
    int (*entry_is_encrypted)(struct archive_entry *);
    la_int64_t (*entry_size)(struct archive_entry *);
    int (*entry_size_is_set)(struct archive_entry *);
    time_t (*entry_mtime)(struct archive_entry *);
    int (*entry_mtime_is_set)(struct archive_entry *);
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure;
static char message[512];

static void *symbol(void *library, const char *name) {
    void *found = dlsym(library, name);
    if (found == NULL && failure == NULL) {
        snprintf(message, sizeof message, "libarchive has no %s (too old?)", name);
        failure = message;
    }
    return found;
}

// Cast through void *: ISO C has no conversion between object and function pointers.
#define LOAD(field, name) (*(void **)&lib.field = symbol(library, name))

static void load(void) {
    // Not honoured in a set-user-ID process: its environment is not to be trusted.
    const char *path = secure_getenv("CARCHIVE_LIBRARY");
    if (path == NULL || *path == '\0') path = "libarchive.so.13";
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(message, sizeof message, "cannot load libarchive (install libarchive13): %s", why ? why : path);
        failure = message;
        return;
    }
    LOAD(read_new, "archive_read_new");
    LOAD(read_free, "archive_read_free");
    LOAD(read_support_filter_gzip, "archive_read_support_filter_gzip");
    LOAD(read_support_filter_bzip2, "archive_read_support_filter_bzip2");
    LOAD(read_support_filter_xz, "archive_read_support_filter_xz");
    LOAD(read_support_filter_lzma, "archive_read_support_filter_lzma");
    LOAD(read_support_filter_zstd, "archive_read_support_filter_zstd");
    LOAD(read_support_filter_lz4, "archive_read_support_filter_lz4");
    LOAD(read_support_filter_compress, "archive_read_support_filter_compress");
    LOAD(read_support_format_all, "archive_read_support_format_all");
    LOAD(read_open_fd, "archive_read_open_fd");
    LOAD(read_next_header, "archive_read_next_header");
    LOAD(read_data, "archive_read_data");
    LOAD(format, "archive_format");
    LOAD(errno_of, "archive_errno");
    LOAD(error_string, "archive_error_string");
    LOAD(entry_pathname, "archive_entry_pathname");
    LOAD(entry_pathname_utf8, "archive_entry_pathname_utf8");
    LOAD(entry_hardlink, "archive_entry_hardlink");
    LOAD(entry_hardlink_utf8, "archive_entry_hardlink_utf8");
    LOAD(entry_symlink, "archive_entry_symlink");
    LOAD(entry_symlink_utf8, "archive_entry_symlink_utf8");
    LOAD(entry_filetype, "archive_entry_filetype");
    LOAD(entry_is_encrypted, "archive_entry_is_encrypted");
    LOAD(entry_size, "archive_entry_size");
    LOAD(entry_size_is_set, "archive_entry_size_is_set");
    LOAD(entry_mtime, "archive_entry_mtime");
    LOAD(entry_mtime_is_set, "archive_entry_mtime_is_set");
}

const char *carchive_load(void) {
    pthread_once(&once, load);
    return failure;
}

struct archive *carchive_read_new(void) { return lib.read_new(); }
int carchive_read_free(struct archive *a) { return lib.read_free(a); }
int carchive_read_support_filter_gzip(struct archive *a) { return lib.read_support_filter_gzip(a); }
int carchive_read_support_filter_bzip2(struct archive *a) { return lib.read_support_filter_bzip2(a); }
int carchive_read_support_filter_xz(struct archive *a) { return lib.read_support_filter_xz(a); }
int carchive_read_support_filter_lzma(struct archive *a) { return lib.read_support_filter_lzma(a); }
int carchive_read_support_filter_zstd(struct archive *a) { return lib.read_support_filter_zstd(a); }
int carchive_read_support_filter_lz4(struct archive *a) { return lib.read_support_filter_lz4(a); }
int carchive_read_support_filter_compress(struct archive *a) { return lib.read_support_filter_compress(a); }
int carchive_read_support_format_all(struct archive *a) { return lib.read_support_format_all(a); }
int carchive_read_open_fd(struct archive *a, int fd, size_t block_size) { return lib.read_open_fd(a, fd, block_size); }
int carchive_read_next_header(struct archive *a, struct archive_entry **entry) { return lib.read_next_header(a, entry); }
la_ssize_t carchive_read_data(struct archive *a, void *buffer, size_t size) { return lib.read_data(a, buffer, size); }
int carchive_format(struct archive *a) { return lib.format(a); }
int carchive_errno(struct archive *a) { return lib.errno_of(a); }
const char *carchive_error_string(struct archive *a) { return lib.error_string(a); }

const char *carchive_entry_pathname(struct archive_entry *e) { return lib.entry_pathname(e); }
const char *carchive_entry_pathname_utf8(struct archive_entry *e) { return lib.entry_pathname_utf8(e); }
const char *carchive_entry_hardlink(struct archive_entry *e) { return lib.entry_hardlink(e); }
const char *carchive_entry_hardlink_utf8(struct archive_entry *e) { return lib.entry_hardlink_utf8(e); }
const char *carchive_entry_symlink(struct archive_entry *e) { return lib.entry_symlink(e); }
const char *carchive_entry_symlink_utf8(struct archive_entry *e) { return lib.entry_symlink_utf8(e); }
__LA_MODE_T carchive_entry_filetype(struct archive_entry *e) { return lib.entry_filetype(e); }
int carchive_entry_is_encrypted(struct archive_entry *e) { return lib.entry_is_encrypted(e); }
la_int64_t carchive_entry_size(struct archive_entry *e) { return lib.entry_size(e); }
int carchive_entry_size_is_set(struct archive_entry *e) { return lib.entry_size_is_set(e); }
time_t carchive_entry_mtime(struct archive_entry *e) { return lib.entry_mtime(e); }
int carchive_entry_mtime_is_set(struct archive_entry *e) { return lib.entry_mtime_is_set(e); }
