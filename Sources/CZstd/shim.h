// Zstandard (the system's libzstd), for the content-decoding middleware's `zstd` bodies, and for tests that serve them.
#include <zstd.h>
#include <zstd_errors.h>
