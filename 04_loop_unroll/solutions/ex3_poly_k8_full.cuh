/* Exercise 3 (warm-up): K = 8 chains per thread, and as many threads as fit.
 *
 * Asked: launch unroll_poly<8> like poly_k1_full (the occupancy query's grid of 256-thread
 * blocks) instead of one 128-thread block per SM. Predict its GFLOP/s from the issue bound
 * of poly_k8's loop (the FFMA share of its instructions) and from how close poly_k1_full
 * came to its own bound. How many threads does an SM get?
 *
 * Answer. unroll_poly<8> uses 57 registers (nvcc -Xptxas -v); registers are allocated per
 * warp in steps of 256, so a thread costs 64 and an SM holds 65536 / (64 x 256) = 4 blocks
 * of 256: 1024 threads, 8 warps per scheduler instead of 1 (poly_k1_full, 15 registers,
 * gets 16). Eight warps of eight chains each hide the 4-cycle FMA latency many times over,
 * so the limit is the issue slots: poly_k8's loop is 1133 instructions of which 1032 FFMA
 * (91%), against poly_k1's 178 with 129 (72%). If it gets as close to its bound as
 * poly_k1_full gets to its own (compare its % of peak with 72%), it lands well above
 * poly_k8; each thread's last elements, evaluated one chain at a time, cost a few percent
 * (about 124 elements per thread at 2^24, 4 or 5 of them alone). */
#ifndef CH04_EX3_POLY_K8_FULL_CUH
#define CH04_EX3_POLY_K8_FULL_CUH

#include "../kernels.cuh"

static inline void ex3_launch_poly_k8_full(float *y, int n, float h)
{
    static int resident = 0;
    if (resident == 0) resident = reduce_resident_blocks((const void *)unroll_poly<8>, 256);
    unroll_poly<8><<<resident, 256>>>(y, n, h);
    CHECK_LAUNCH();
}

#endif
