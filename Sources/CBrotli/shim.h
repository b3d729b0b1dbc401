// The brotli decoder (Google's libbrotlidec), for the content-decoding middleware's `br` bodies.
#include <brotli/decode.h>
