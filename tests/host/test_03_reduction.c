/* Host tests of chapter 03's reference and tolerance (03_reduction/reference.h): the
 * float summation orders the kernels use, replayed on the CPU, stay within the stated
 * tolerance on random inputs and are exact on the integer inputs. */
#include <stdio.h>
#include <stdlib.h>

#include "03_reduction/reference.h"

static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

/* v3..v5's order: blocks of 256 folded in halves (sequential addressing), pass after pass. */
static float sim_tree(const float *x, size_t n)
{
    float *cur = malloc(n * sizeof(float)), buf[256];
    for (size_t i = 0; i < n; i++) cur[i] = x[i];
    while (n > 1) {
        size_t blocks = (n + 255) / 256;
        for (size_t b = 0; b < blocks; b++) {
            for (size_t t = 0; t < 256; t++) buf[t] = b * 256 + t < n ? cur[b * 256 + t] : 0.0f;
            for (size_t s = 128; s > 0; s >>= 1)
                for (size_t t = 0; t < s; t++) buf[t] += buf[t + s];
            cur[b] = buf[0];
        }
        n = blocks;
    }
    float r = cur[0];
    free(cur);
    return r;
}

/* v6/v7's order: each of `threads` threads keeps a running sum over two float4 per step
 * a grid apart, plus one tail element; then the threads' sums are added pairwise. */
static float sim_grid_stride(const float *x, size_t n, size_t threads)
{
    float *acc = calloc(threads, sizeof(float));
    size_t n4 = n / 4;
    for (size_t t = 0; t < threads; t++) {
        size_t i = t;
        for (; i + threads < n4; i += 2 * threads) {
            const float *a = x + 4 * i, *b = x + 4 * (i + threads);
            acc[t] += ((a[0] + a[1]) + (a[2] + a[3])) + ((b[0] + b[1]) + (b[2] + b[3]));
        }
        if (i < n4) acc[t] += (x[4 * i] + x[4 * i + 1]) + (x[4 * i + 2] + x[4 * i + 3]);
        if (4 * n4 + t < n) acc[t] += x[4 * n4 + t];
    }
    float r = sim_tree(acc, threads);
    free(acc);
    return r;
}

static void check_orders(size_t n, size_t threads)
{
    float *x = malloc(n * sizeof(float));
    char what[160];
    reduce_fill_random(x, n, 99 + n);
    double ref = reduce_ref_sum(x, n), abs_sum = reduce_ref_abs_sum(x, n),
           tol = reduce_tolerance(n);
    double e1 = reduce_rel_error(sim_tree(x, n), ref, abs_sum);
    double e2 = reduce_rel_error(sim_grid_stride(x, n, threads), ref, abs_sum);
    snprintf(what, sizeof what,
             "random n=%zu: tree %.2e and grid-stride %.2e within tolerance %.2e", n, e1, e2, tol);
    expect(e1 <= tol && e2 <= tol, what);

    reduce_fill_integers(x, n, 7 + n);
    ref = reduce_ref_sum(x, n);
    long long exact = 0;
    for (size_t i = 0; i < n; i++) exact += (long long)x[i];
    snprintf(what, sizeof what,
             "integers n=%zu: both orders and the double reference give exactly %lld", n, exact);
    expect(ref == (double)exact && (double)sim_tree(x, n) == ref &&
               (double)sim_grid_stride(x, n, threads) == ref,
           what);
    free(x);
}

int main(void)
{
    size_t sizes[] = {1, 2, 3, 1023, 1025, 999983, 1u << 22};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i], threads = (n / 4 + 255) / 256 * 256;
        if (threads > 8192) threads = 8192; /* a small GPU: 4 SMs of 2048 threads */
        if (threads == 0) threads = 256;
        check_orders(n, threads);
    }

    /* The depth bound: a grid of at least sqrt(n)/8 threads keeps the per-thread chain
     * (n / (4 * threads) float4 steps, plus 2 adds inside each float4) below 2 sqrt(n). */
    int ok = 1;
    for (double n = 1; n <= 2147483647.0; n *= 2) {
        double threads = ceil(sqrt(n) / 8), chain = ceil(n / 4 / threads) + 2 + log2(threads) + 10;
        ok &= chain <= reduce_depth_bound((size_t)n);
    }
    expect(ok,
           "depth bound covers the grid-stride chain for n up to 2^31 with >= sqrt(n)/8 threads");

    expect(reduce_tolerance(1) < 2e-6 && reduce_tolerance(1u << 28) < 2.5e-3 &&
               reduce_tolerance(1u << 28) > reduce_tolerance(1u << 24),
           "tolerance grows with n: 2^-24-scale at n=1, under 2.5e-3 at 2^28");
    expect(reduce_rel_error(0.0f / 0.0f, 1.0, 1.0) == INFINITY, "a NaN (poisoned) result fails");
    return failures ? 1 : 0;
}
