// libarchive for the archive: plugin, loaded when the first archive is opened (dlopen) rather than linked: a
// process that links the plugin but never opens an archive (loadurl fetching http: URLs) does not map
// libarchive and the ten libraries it needs (nettle, xml2, ICU, the compressors: about 3.5 MiB of resident
// memory and a third of a millisecond of start-up here). Only libarchive's headers are needed to build.
//
// Every libarchive function the plugin calls has a `carchive_` twin here that goes through the loaded table.
#ifndef CARCHIVE_H
#define CARCHIVE_H

#include <archive.h>
#include <archive_entry.h>

/// Loads libarchive once per process (`CARCHIVE_LIBRARY` names another file to load, for tests). Returns NULL
/// when it is ready, else why it is not (a message that lives for the process).
const char *carchive_load(void);

// The file types carchive_entry_filetype() returns: macros with casts, which Swift does not import.
static const unsigned int CArchiveTypeRegular = AE_IFREG;
static const unsigned int CArchiveTypeFolder = AE_IFDIR;

// The twins, to be called only after carchive_load() returned NULL.

struct archive *carchive_read_new(void);
int carchive_read_free(struct archive *archive);
int carchive_read_support_filter_gzip(struct archive *archive);
int carchive_read_support_filter_bzip2(struct archive *archive);
int carchive_read_support_filter_xz(struct archive *archive);
int carchive_read_support_filter_lzma(struct archive *archive);
int carchive_read_support_filter_zstd(struct archive *archive);
int carchive_read_support_filter_lz4(struct archive *archive);
int carchive_read_support_filter_compress(struct archive *archive);
int carchive_read_support_format_all(struct archive *archive);
int carchive_read_open_fd(struct archive *archive, int fd, size_t block_size);
int carchive_read_next_header(struct archive *archive, struct archive_entry **entry);
la_ssize_t carchive_read_data(struct archive *archive, void *buffer, size_t size);
int carchive_format(struct archive *archive);
int carchive_errno(struct archive *archive);
const char *carchive_error_string(struct archive *archive);

const char *carchive_entry_pathname(struct archive_entry *entry);
const char *carchive_entry_pathname_utf8(struct archive_entry *entry);
const char *carchive_entry_hardlink(struct archive_entry *entry);
const char *carchive_entry_hardlink_utf8(struct archive_entry *entry);
const char *carchive_entry_symlink(struct archive_entry *entry);
const char *carchive_entry_symlink_utf8(struct archive_entry *entry);
__LA_MODE_T carchive_entry_filetype(struct archive_entry *entry);
int carchive_entry_is_encrypted(struct archive_entry *entry);
la_int64_t carchive_entry_size(struct archive_entry *entry);
int carchive_entry_size_is_set(struct archive_entry *entry);
time_t carchive_entry_mtime(struct archive_entry *entry);
int carchive_entry_mtime_is_set(struct archive_entry *entry);

#endif
