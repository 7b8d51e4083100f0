/* Exercise 2 (warm-up): the grid-stride loop unrolled by 32.
 *
 * Asked: add gs_u32 (one line: unroll_launch_grid_stride<32, true>). Before running, read
 * its registers (nvcc -Xptxas -v) and the loop in the SASS (cuobjdump -sass: how many
 * LDG.E.128 are issued before the first FADD?), and predict its bandwidth.
 *
 * Answer. ptxas gives unroll_grid_stride<32, true> 34 registers, as for U = 16 (40 once
 * rounded to the allocation step), so an SM holds 6 blocks of 256 instead of 8. The SASS
 * is gs_u16's pattern, longer: four LDG.E.128 back to back, then a load and an add
 * alternating, so about four float4 (64 bytes) are in flight per thread at any time, not
 * 32. Per SM that is 6 x 256 x 64 bytes = 96 KB, three times what Little's law asks (about
 * 32 KB per SM: the H200's bandwidth times a microsecond, over 132 SMs). Prediction:
 * gs_u16's bandwidth within the noise.
 * Unrolling stops paying once the bytes in flight cover the latency; past that point it
 * only adds code and registers, and registers cost occupancy that another kernel might
 * need to hide its own latencies. */
#ifndef CH04_EX2_GS_U32_CUH
#define CH04_EX2_GS_U32_CUH

#include "../kernels.cuh"

static inline void ex2_launch_gs_u32(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    unroll_launch_grid_stride<32, true>(in, n, out, ws);
}

#endif
