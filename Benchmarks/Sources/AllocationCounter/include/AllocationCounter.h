#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

/// The number of allocator calls (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made in
/// this process since it started. `run.py` preloads this library (LD_PRELOAD) for the runs that count
/// allocations, and LoaderBench finds the function with dlsym; the timed runs go without it.
unsigned long bench_allocation_count(void);

#endif
