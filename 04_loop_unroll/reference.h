/* Chapter 04's polynomial on the host: the points, the coefficients, the double-precision
 * reference and the error measure. Plain C (the host tests use it).
 *
 * Error of Horner's rule with FMAs in float: each of the D steps rounds once, so
 *     |p_float(x) - p(x)| <= gamma_{D+1} * sum_j |c_j| |x|^j,   gamma_k ~ k * 2^-24
 * (Higham, ch. 5). The check divides |gpu - ref| by that sum and allows 2 (D + 1) 2^-24,
 * a factor 2 of margin; dividing by |p(x)| instead would blow up near the roots of p. */
#ifndef CH04_REFERENCE_H
#define CH04_REFERENCE_H

#include <math.h>
#include <stddef.h>

#include "common/validate.h"

/* The point x_i = -1 + i * h in float, rounded once: the GPU computes the same value. */
static inline float unroll_poly_point(size_t i, float h) { return fmaf((float)i, h, -1.0f); }

static inline float unroll_poly_step(int n) { return 2.0f / (float)n; }

/* Coefficients c_0 .. c_degree, uniform in [-1, 1). */
static inline void unroll_poly_coefficients(float *c, int degree, unsigned long long seed)
{
    fill_uniform(c, (size_t)degree + 1, -1.0f, 1.0f, seed);
}

/* p(x) = sum_j c_j x^j by Horner's rule in double. */
static inline double unroll_poly_horner(const float *c, int degree, double x)
{
    double p = c[degree];
    for (int d = degree - 1; d >= 0; d--) p = p * x + c[d];
    return p;
}

/* sum_j |c_j| |x|^j: the scale of the rounding error (see above). */
static inline double unroll_poly_abs_scale(const float *c, int degree, double x)
{
    double p = fabs((double)c[degree]), ax = fabs(x);
    for (int d = degree - 1; d >= 0; d--) p = p * ax + fabs((double)c[d]);
    return p;
}

static inline double unroll_poly_tolerance(int degree) { return 2.0 * (degree + 1) * 0x1p-24; }

/* ref[i] = p(x_i) in double and scale[i] = sum_j |c_j| |x_i|^j, for i < n. */
static inline void unroll_poly_reference(const float *c, int degree, int n, double *ref,
                                         double *scale)
{
    float h = unroll_poly_step(n);
    for (int i = 0; i < n; i++) {
        double x = unroll_poly_point((size_t)i, h);
        ref[i] = unroll_poly_horner(c, degree, x);
        scale[i] = unroll_poly_abs_scale(c, degree, x);
    }
}

/* max_i |y_i - ref_i| / scale_i; INFINITY if any y_i is not finite (a poisoned output). */
static inline double unroll_poly_max_error(const float *y, const double *ref, const double *scale,
                                           int n)
{
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double g = (double)y[i];
        if (!isfinite(g)) return INFINITY;
        double e = fabs(g - ref[i]) / scale[i];
        if (e > worst) worst = e;
    }
    return worst;
}

#endif
