/* Chapter 03's host side that needs no GPU: the double-precision reference sum, the
 * inputs, and the tolerance of a float sum of n values. Plain C (the host tests use it).
 *
 * Why the tolerance depends on n. A float sum is a tree of additions (a chain is a
 * degenerate tree); each addition rounds once, by at most u = 2^-24 relative. If no
 * element goes through more than L additions on its way to the result, then
 *     |gpu - exact| <= L * u * sum_i |x_i|   (to first order; Higham, "Accuracy and
 * Stability of Numerical Algorithms", ch. 4). The versions here (and CUB) are trees whose
 * depth is at most: a per-thread running sum over at most n / (4 * threads) float4 loads,
 * which is <= sqrt(n) because every grid has at least sqrt(n)/4 threads (two adds per
 * float4), plus log2 levels inside blocks and passes. So the check is
 *     |gpu - ref| / sum_i |x_i|  <=  (2 sqrt(n) + 3 log2(n + 1) + 16) * 2^-24.
 * Measured against sum |x_i|, not |sum x_i|: with mixed signs the sum itself is small
 * (about sqrt(n)/sqrt(3)) and says nothing about how large the rounding may be.
 *
 * That bound is loose at large n, so a second input catches lost or doubled elements at
 * every size: small integers in [-16, 16]. Every partial sum is then an integer far
 * below 2^24 in magnitude (a random walk: about 9.5 * sqrt(n) <= 2^19 for n <= 2^31),
 * every addition is exact in any order, and the GPU must match the reference exactly. */
#ifndef CH03_REFERENCE_H
#define CH03_REFERENCE_H

#include <math.h>
#include <stddef.h>

#include "common/validate.h"

#define REDUCE_INT_RANGE 16 /* integer inputs lie in [-16, 16] */

/* sum of x in double. Exact for these inputs below n = 2^30: the random ones are multiples
 * of 2^-23 in [-1, 1), the integers are at most 16, so no partial sum needs more than 53 bits. */
static inline double reduce_ref_sum(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i];
    return s;
}

static inline double reduce_ref_abs_sum(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += fabs((double)x[i]);
    return s;
}

/* The longest chain of additions an element goes through in any version here. */
static inline double reduce_depth_bound(size_t n)
{
    return 2.0 * sqrt((double)n) + 3.0 * log2((double)n + 1.0) + 16.0;
}

/* The tolerance of |gpu - ref| / sum|x_i| for a float sum of n values. */
static inline double reduce_tolerance(size_t n) { return reduce_depth_bound(n) * 0x1p-24; }

/* |gpu - ref| / sum|x|, or INFINITY if gpu is not finite (a poisoned output). */
static inline double reduce_rel_error(float gpu, double ref, double abs_sum)
{
    double g = (double)gpu;
    if (!isfinite(g)) return INFINITY;
    return fabs(g - ref) / (abs_sum > 0.0 ? abs_sum : 1.0);
}

/* Mixed-sign uniform inputs in [-1, 1). */
static inline void reduce_fill_random(float *x, size_t n, unsigned long long seed)
{
    fill_uniform(x, n, -1.0f, 1.0f, seed);
}

/* Integers in [-REDUCE_INT_RANGE, REDUCE_INT_RANGE] as floats. */
static inline void reduce_fill_integers(float *x, size_t n, unsigned long long seed)
{
    Rng r = {seed};
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((long long)(rng_next(&r) % (2 * REDUCE_INT_RANGE + 1)) - REDUCE_INT_RANGE);
}

#endif
