/* Exercise 6 (stretch): Estrin's scheme, a tree instead of a chain.
 *
 * Asked: Horner's rule is one chain of D dependent FMAs. Estrin's scheme evaluates the
 * same polynomial as a tree: first the pairs a_k = c_2k + c_(2k+1) x (64 independent
 * FMAs), then pairs of those with x^2, then with x^4, and so on, squaring x once per level:
 * the same 128 FMAs plus 7 multiplies, but only about 8 levels deep. One element per
 * thread, one 128-thread block per SM as for poly_k*. Predict its GFLOP/s against poly_k8
 * (which needs 8 elements per thread for its parallelism), then read its registers and
 * its loop in the SASS: where do the coefficients come from?
 *
 * Answer. The first level's FMAs each take two coefficients, c_2k and c_(2k+1), and an
 * FFMA can take only one operand from constant memory: the other must be in a register.
 * Left to itself, ptxas loads it inside the loop (65 LDC.64 per element, each a load from
 * the constant cache that the FMAs wait for) and keeps 50 registers; its schedule then
 * needs about 590 cycles per element, four times poly_k8's. This answer loads the 129
 * coefficients into registers once, before the loop, and tells ptxas with
 * __launch_bounds__(128, 1) that a block has at most 128 threads and one block per SM is
 * enough: it may then use up to 255 registers a thread, and keeps the coefficients (171
 * registers; 128 threads x 171 fit an SM's 64K easily). The loop is then 145
 * instructions, 129 of them FFMA, and ptxas's schedule (the stall counts in the SASS's
 * control bits) adds up to 176 cycles per element against 128 for the FMAs alone: about
 * 73% of the peak by the schedule, near poly_k8's measured rate, with one element per
 * thread and no unrolling. What is left is the top of the tree (the last levels have one
 * or two FMAs each, 4 cycles apart) and the chain of squarings x^2 ... x^128.
 * Accuracy: x^(2^k) carries up to 2^k - 1 roundings, so a term c_j x^j carries about
 * j + 8 of them, inside the check's 2 (D + 1) 2^-24 of sum_j |c_j||x|^j. */
#ifndef CH04_EX6_POLY_ESTRIN_CUH
#define CH04_EX6_POLY_ESTRIN_CUH

#include "../kernels.cuh"

/* One level of Estrin's scheme and the levels above it: the M values a[0..M) are paired
 * with power = x^(2^level), a[k] = a[2k] + a[2k+1] * power (an odd value out is carried
 * up as it is), until one value is left. M is a template parameter so that every index is
 * a constant and a[] lives in registers (with a run-time count it would go to memory). */
template <int M> static __device__ __forceinline__ float ex6_estrin_levels(float *a, float power)
{
    if constexpr (M == 1) {
        return a[0];
    } else {
#pragma unroll
        for (int k = 0; k < M / 2; k++) a[k] = __fmaf_rn(a[2 * k + 1], power, a[2 * k]);
        if (M % 2 == 1) a[M / 2] = a[M - 1];
        return ex6_estrin_levels<(M + 1) / 2>(a, power * power);
    }
}

/* p(x) by Estrin's scheme from the coefficients c[0..D] (in registers): the pairs first,
 * a_k = c_2k + c_(2k+1) x, then the levels with x^2, x^4, ..., x^128. */
static __device__ __forceinline__ float ex6_estrin(const float *c, float x)
{
    constexpr int M = UNROLL_POLY_DEGREE / 2 + 1; /* pairs, and c_D when D is even */
    float a[M];
#pragma unroll
    for (int k = 0; k < UNROLL_POLY_DEGREE / 2; k++) a[k] = __fmaf_rn(c[2 * k + 1], x, c[2 * k]);
    if (UNROLL_POLY_DEGREE % 2 == 0) a[M - 1] = c[UNROLL_POLY_DEGREE];
    return ex6_estrin_levels<M>(a, x * x);
}

/* One element per thread per step. The coefficients are copied into registers once:
 * __launch_bounds__ lets ptxas spend the registers (one 128-thread block per SM). */
__global__ void __launch_bounds__(UNROLL_POLY_BLOCK, 1) ex6_poly_estrin(float *y, int n, float h)
{
    float c[UNROLL_POLY_DEGREE + 1];
#pragma unroll
    for (int j = 0; j <= UNROLL_POLY_DEGREE; j++) c[j] = unroll_poly_coef[j];
    size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll 1
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride)
        y[i] = ex6_estrin(c, unroll_poly_x(i, h));
}

static inline void ex6_launch_poly_estrin(float *y, int n, float h)
{
    ex6_poly_estrin<<<unroll_sm_count(), UNROLL_POLY_BLOCK>>>(y, n, h);
    CHECK_LAUNCH();
}

#endif
