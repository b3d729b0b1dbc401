// The brotli encoder (libbrotlienc), for tests that serve `br` bodies as real servers send them.
#include <brotli/encode.h>
