/* Fork-join parallelism over pthreads: run fn(ctx, tid, nthreads) on
 * nthreads threads (the caller is thread 0) and wait for all of them.
 *
 * Kernels split their work either statically by tid or dynamically through
 * an atomic task counter (pool_next_task), so a thread that finishes early
 * picks up the next window or chunk. */
#ifndef CUZK_POOL_H
#define CUZK_POOL_H

#include <stddef.h>

typedef void (*pool_fn)(void *ctx, int tid, int nthreads);

void pool_run(int nthreads, pool_fn fn, void *ctx);

static inline size_t pool_next_task(size_t *counter)
{
    return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The [lo, hi) share of thread tid in a static split of n items. */
static inline void pool_split(size_t n, int tid, int nthreads, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)tid / (size_t)nthreads;
    *hi = n * (size_t)(tid + 1) / (size_t)nthreads;
}

#endif
