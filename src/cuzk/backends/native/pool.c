#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    pool_fn fn;
    void *ctx;
    int tid;
    int nthreads;
} pool_arg;

static void *pool_trampoline(void *p)
{
    pool_arg *a = (pool_arg *)p;
    a->fn(a->ctx, a->tid, a->nthreads);
    return NULL;
}

void pool_run(int nthreads, pool_fn fn, void *ctx)
{
    if (nthreads <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_t *threads = malloc(sizeof(pthread_t) * (size_t)nthreads);
    pool_arg *args = malloc(sizeof(pool_arg) * (size_t)nthreads);
    int *started = calloc((size_t)nthreads, sizeof(int));
    if (!threads || !args || !started) {
        /* Out of memory for bookkeeping: still correct, just serial. */
        free(threads);
        free(args);
        free(started);
        for (int t = 0; t < nthreads; t++)
            fn(ctx, t, nthreads);
        return;
    }
    for (int t = 1; t < nthreads; t++) {
        args[t] = (pool_arg){fn, ctx, t, nthreads};
        started[t] = pthread_create(&threads[t], NULL, pool_trampoline, &args[t]) == 0;
    }
    fn(ctx, 0, nthreads);
    for (int t = 1; t < nthreads; t++) {
        if (started[t])
            pthread_join(threads[t], NULL);
        else
            fn(ctx, t, nthreads); /* thread creation failed: do its share here */
    }
    free(threads);
    free(args);
    free(started);
}
