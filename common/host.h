/* Small host-side helpers every driver needs: checked malloc, a wall clock and a median
 * for timing CPU code. Plain C: the host tests compile it with gcc. */
#ifndef COMMON_HOST_H
#define COMMON_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* malloc that exits with a message instead of returning NULL. */
static inline void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* Monotonic wall-clock time in milliseconds. */
static inline double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static inline int host_compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of v[0..n) (sorts v in place). */
static inline double median_double(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), host_compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
