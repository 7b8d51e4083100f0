/* Chapter 06, host side only (plain C, also compiled by the host tests with gcc):
 * the CPU reference of the elementwise workload, how an array is cut into chunks, and the
 * nominal PCIe rate the transfers are judged against. */
#ifndef CH06_REFERENCE_H
#define CH06_REFERENCE_H

#include <math.h>
#include <stddef.h>

/* The workload: y0 = x, then `work` times y = A*y + B*x. Its fixed point is
 * y = B*x / (1 - A) = 2x, so y_work = 2x - x*A^work: every output depends on its own
 * input (a chunk copied to the wrong place is caught) and stays between x and 2x. */
#define SP_A 0.9375f /* 15/16: exact in float */
#define SP_B 0.125f  /* 1/8: B*x is exact */

/* Tolerance of every check, relative to |ref|: y stays between x and 2x, each step rounds
 * once (fmaf) or twice (mul + add) by at most 2^-24 of |y| <= 2|x|, and the factor
 * A = 15/16 damps old errors, so the total is at most 2 * 2 * 2^-24 * 1/(1 - A) * |x|
 * = 64 * 2^-24 * |x| = 2^-18 |x| <= 2^-18 |ref|, for any amount of work. */
#define SP_TOL 0x1p-18

/* The CPU reference in double, in closed form: O(n) whatever `work` is. */
static inline void sp_reference(const float *x, double *ref, size_t n, int work)
{
    double keep = 2.0 - pow((double)SP_A, (double)work);
    for (size_t i = 0; i < n; i++) ref[i] = (double)x[i] * keep;
}

/* The same recurrence evaluated step by step, in double: what the closed form is
 * tested against. */
static inline double sp_reference_loop(float x, int work)
{
    double y = x, bx = (double)SP_B * x;
    for (int k = 0; k < work; k++) y = (double)SP_A * y + bx;
    return y;
}

/* Chunking: n elements cut into at most `chunks` pieces of sp_chunk_len elements; the last
 * one may be shorter, and there are fewer pieces than asked when n < chunks or when
 * chunks does not divide n (e.g. n = 100, chunks = 64: 50 pieces of 2). */
static inline long long sp_chunk_len(long long n, int chunks)
{
    long long c = (long long)chunks < n ? (long long)chunks : n;
    return (n + c - 1) / c;
}

static inline int sp_chunk_count(long long n, int chunks)
{
    long long len = sp_chunk_len(n, chunks);
    return (int)((n + len - 1) / len);
}

/* Elements in chunk c (the last one holds the remainder). */
static inline long long sp_chunk_size(long long n, int chunks, int c)
{
    long long len = sp_chunk_len(n, chunks), left = n - (long long)c * len;
    return left < len ? left : len;
}

/* Nominal data rate of a PCIe link in GB/s (1e9 bytes/s) per direction: transfer rate
 * per lane times the line-code efficiency (8b/10b up to gen 2, 128b/130b for gen 3-5,
 * 242/256 FLIT for gen 6), times the lanes. Returns 0 for an unknown generation. */
static inline double sp_pcie_gbs(int gen, int width)
{
    static const double per_lane[] = {0.0,
                                      0.25,
                                      0.5,
                                      8.0 * 128 / 130 / 8,
                                      16.0 * 128 / 130 / 8,
                                      32.0 * 128 / 130 / 8,
                                      64.0 * 242 / 256 / 8};
    if (gen < 1 || gen > 6 || width < 1) return 0.0;
    return per_lane[gen] * width;
}

#endif
