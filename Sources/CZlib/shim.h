// zlib for the content-decoding middleware. zlib's init calls are macros, which Swift cannot import,
// so they are wrapped here.
#include <zlib.h>

static inline int czlib_inflate_init(z_streamp stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

static inline int czlib_deflate_init(z_streamp stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
