/* Host tests of chapter 04's polynomial reference (04_loop_unroll/reference.h): Horner in
 * double against a brute-force sum of powers, and a float Horner with FMAs (what the GPU
 * computes) within the stated tolerance. */
#include <stdio.h>

#include "04_loop_unroll/reference.h"

#define DEGREE 128

static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

static long double brute_force(const float *c, int degree, long double x)
{
    long double s = 0.0L;
    for (int j = 0; j <= degree; j++) s += (long double)c[j] * powl(x, j);
    return s;
}

static float horner_float(const float *c, int degree, float x)
{
    float p = c[degree];
    for (int d = degree - 1; d >= 0; d--) p = fmaf(p, x, c[d]);
    return p;
}

int main(void)
{
    float c[DEGREE + 1];
    unroll_poly_coefficients(c, DEGREE, 1241);
    int n = 1000003;
    float h = unroll_poly_step(n);
    double worst_ref = 0.0, worst_float = 0.0;
    int in_range = 1;
    for (int i = 0; i < n; i += 997) {
        float x = unroll_poly_point((size_t)i, h);
        in_range &= x >= -1.0f && x < 1.0f;
        double scale = unroll_poly_abs_scale(c, DEGREE, x);
        double ref = unroll_poly_horner(c, DEGREE, x);
        double e = fabs(ref - (double)brute_force(c, DEGREE, x)) / scale;
        if (e > worst_ref) worst_ref = e;
        e = fabs((double)horner_float(c, DEGREE, x) - ref) / scale;
        if (e > worst_float) worst_float = e;
    }
    char what[160];
    snprintf(what, sizeof what, "double Horner matches the sum of powers (error %.1e <= 1e-13)",
             worst_ref);
    expect(worst_ref <= 1e-13, what);
    snprintf(what, sizeof what, "float Horner with FMAs within the tolerance (%.1e <= %.1e)",
             worst_float, unroll_poly_tolerance(DEGREE));
    expect(worst_float <= unroll_poly_tolerance(DEGREE), what);
    expect(in_range && unroll_poly_point(0, h) == -1.0f, "points lie in [-1, 1) and start at -1");

    double ref[3], scale[3];
    unroll_poly_reference(c, DEGREE, 3, ref, scale);
    float y[3] = {(float)ref[0], (float)ref[1], (float)ref[2]};
    int exact_ok = unroll_poly_max_error(y, ref, scale, 3) <= unroll_poly_tolerance(DEGREE);
    y[2] = 0.0f / 0.0f;
    expect(exact_ok && unroll_poly_max_error(y, ref, scale, 3) == INFINITY,
           "a correctly rounded output passes, a NaN (poisoned) one fails");
    return failures ? 1 : 0;
}
