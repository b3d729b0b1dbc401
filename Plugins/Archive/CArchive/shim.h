#include <archive.h>
#include <archive_entry.h>

// The file types archive_entry_filetype() returns: macros with casts, which Swift does not import.
static const unsigned int CArchiveTypeRegular = AE_IFREG;
static const unsigned int CArchiveTypeFolder = AE_IFDIR;
