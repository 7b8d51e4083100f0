/* Random inputs and error measures for checking a GPU result against a CPU reference
 * computed in double precision. Plain C: the host tests compile it with gcc. */
#ifndef COMMON_VALIDATE_H
#define COMMON_VALIDATE_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

/* splitmix64: a small, seedable generator, so every run can print and reuse its seed. */
typedef struct {
    unsigned long long state;
} Rng;

static inline unsigned long long rng_next(Rng *r)
{
    unsigned long long z = (r->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits, exactly representable as a float. */
static inline float rng_uniform(Rng *r)
{
    return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* Fills x[0..n) with uniform values in [lo, hi). */
static inline void fill_uniform(float *x, size_t n, float lo, float hi, unsigned long long seed)
{
    Rng r = {seed};
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(&r);
}

/* max_i |gpu_i - ref_i| / max(|ref_i|, tiny); a NaN or Inf anywhere gives INFINITY,
 * so an unwritten (poisoned) element always fails. *worst receives its index. */
static inline double max_rel_error(const float *gpu, const double *ref, size_t n, double tiny,
                                   size_t *worst)
{
    double maxerr = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double g = (double)gpu[i];
        double e = isfinite(g) ? fabs(g - ref[i]) / fmax(fabs(ref[i]), tiny) : INFINITY;
        if (!(e <= maxerr)) {
            maxerr = e;
            at = i;
        }
    }
    if (worst) *worst = at;
    return maxerr;
}

/* One pass over a result: the sums of (gpu - ref)^2 and ref^2 and, if worst is given, the
 * largest |gpu - ref|. 0 if an element is not finite (the sums are then incomplete). */
static inline int diff_sums(const float *gpu, const double *ref, size_t n, double *num, double *den,
                            double *worst)
{
    *num = 0.0, *den = 0.0;
    if (worst) *worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = (double)gpu[i];
        if (!isfinite(g)) return 0;
        *num += (g - ref[i]) * (g - ref[i]);
        *den += ref[i] * ref[i];
        if (worst) *worst = fmax(*worst, fabs(g - ref[i]));
    }
    return 1;
}

/* sqrt(num / den), the normwise error of diff_sums' sums (the absolute norm if den is 0). */
static inline double norm_of_sums(double num, double den)
{
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* ||gpu - ref||_2 / ||ref||_2 (or the absolute norm if ref is all zero); INFINITY if any
 * element is not finite. For long sums and products, where single elements may cancel. */
static inline double norm_rel_error(const float *gpu, const double *ref, size_t n)
{
    double num, den;
    if (!diff_sums(gpu, ref, n, &num, &den, NULL)) return INFINITY;
    return norm_of_sums(num, den);
}

/* The normwise relative error of a result, or, where larger, its worst element's error over
 * the reference's root mean square, divided by 4 sqrt(2 ln n): sqrt(2 ln n) is about the
 * largest of n normal errors in units of their spread, and 4 leaves room for errors that
 * grow with their element (e4m3's truncating tensor-core sums). A few hundred wrong elements
 * (one chunk of a tile computed from stale inputs, each off by the size of C's values) hide
 * in the normwise error of 16 million, not in the worst one. Both from one pass. */
static inline double norm_or_worst_error(const float *gpu, const double *ref, size_t n)
{
    double num, den, worst;
    if (!diff_sums(gpu, ref, n, &num, &den, &worst)) return INFINITY;
    double norm = norm_of_sums(num, den);
    if (n == 0) return norm;
    double rms = sqrt(den / (double)n), bound = 4.0 * sqrt(fmax(1.0, 2.0 * log((double)n)));
    return fmax(norm, (rms > 0.0 ? worst / rms : worst) / bound);
}

/* Prints one check line and returns 1 if err <= tol (a NaN error fails). */
static inline int report_check(const char *what, const char *size, double err, double tol)
{
    int ok = err <= tol;
    printf("  %-4s %-28s size %-16s error %.3e (tolerance %.1e)\n", ok ? "ok" : "FAIL", what, size,
           err, tol);
    return ok;
}

#endif
