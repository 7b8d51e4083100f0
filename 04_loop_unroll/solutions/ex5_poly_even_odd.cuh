/* Exercise 5 (practice): two independent Horner chains for one element.
 *
 * Asked: poly_k2 finds a second chain in a second element. Find it inside one element
 * instead: split p into its even and odd powers, p(x) = E(x^2) + x O(x^2), and evaluate
 * E and O by Horner's rule in y = x^2, side by side: two chains of half the length, one
 * element per thread, one 128-thread block per SM as for poly_k*. Predict its GFLOP/s
 * against poly_k1 and poly_k2, and check that it stays within the tolerance.
 *
 * Answer. The scheduler sees two independent FMAs at every step, as in poly_k2, so expect
 * poly_k2's rate: about twice poly_k1's, bounded by the 4-cycle FMA latency at 50% of the
 * peak with one warp per scheduler. It does one multiply more (x * x) and the same 128
 * FMAs. Accuracy: y = x^2 is rounded once, and y^k then carries up to k roundings, so a
 * term's error grows to about twice Horner's (about 2 (D/2) + 2 = D + 2 roundings of
 * sum_j |c_j||x|^j), inside the check's 2 (D + 1) 2^-24. */
#ifndef CH04_EX5_POLY_EVEN_ODD_CUH
#define CH04_EX5_POLY_EVEN_ODD_CUH

#include "../kernels.cuh"

static_assert(UNROLL_POLY_DEGREE % 2 == 0, "the even part ends with c_D, the odd with c_(D-1)");

/* p(x) = E(y) + x O(y), y = x^2: E has the coefficients c_0, c_2, ..., c_D, O has c_1, c_3,
 * ..., c_(D-1); each is a chain of dependent FMAs, but the two chains are independent. */
static __device__ __forceinline__ float ex5_even_odd(float x)
{
    float y = x * x;
    float e = unroll_poly_coef[UNROLL_POLY_DEGREE];
    float o = unroll_poly_coef[UNROLL_POLY_DEGREE - 1];
#pragma unroll
    for (int k = UNROLL_POLY_DEGREE / 2 - 1; k >= 0; k--) {
        e = __fmaf_rn(e, y, unroll_poly_coef[2 * k]);
        if (k > 0) o = __fmaf_rn(o, y, unroll_poly_coef[2 * k - 1]);
    }
    return __fmaf_rn(o, x, e);
}

__global__ void ex5_poly_even_odd(float *y, int n, float h)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll 1
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride)
        y[i] = ex5_even_odd(unroll_poly_x(i, h));
}

static inline void ex5_launch_poly_even_odd(float *y, int n, float h)
{
    ex5_poly_even_odd<<<unroll_sm_count(), UNROLL_POLY_BLOCK>>>(y, n, h);
    CHECK_LAUNCH();
}

#endif
