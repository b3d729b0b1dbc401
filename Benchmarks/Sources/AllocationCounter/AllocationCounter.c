// Counts allocator calls by interposing glibc's allocation entry points and forwarding each to glibc's own
// implementation (the __libc_* aliases), so free() and malloc_usable_size() keep working unchanged.
#include "AllocationCounter.h"
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

// Counting needs glibc's __libc_* entry points; elsewhere the library only answers zero.
#if defined(__GLIBC__)

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic unsigned long allocations;

static inline void counted(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

unsigned long bench_allocation_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }

void *calloc(size_t count, size_t size) { counted(); return __libc_calloc(count, size); }

void *realloc(void *pointer, size_t size) { counted(); return __libc_realloc(pointer, size); }

void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }

void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    // The checks posix_memalign makes and memalign does not: a power of two, a multiple of a pointer.
    if (alignment == 0 || alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted();
    void *memory = __libc_memalign(alignment, size);
    if (memory == NULL) return ENOMEM;
    *result = memory;
    return 0;
}

#else

unsigned long bench_allocation_count(void) { return 0; }

#endif
