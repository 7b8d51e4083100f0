/* Chapter 05, thin_m and thin_n: the pipelined kernel of sgemm_pipelined.cuh with tiles 32
 * wide in one direction, for C with few rows (thin_m: 32x128 tiles) or few columns
 * (thin_n: 128x32). sgemm_best picks them through its model (sgemm_model.h).
 *
 * Why: every other tile is at least 64 wide both ways, and a tile computes all of its
 * outputs whether C has them or not. On a 16 x 8192 C with K = 8192 a 64-row tile does 4x
 * the FMAs that C needs; with 32 rows, 2x. Such a product is also the one where memory
 * decides: each element of B is used only M times, 16 FMAs per 4 bytes read, so the kernel
 * has to stream B at DRAM speed and cannot afford to spend 4x the FMAs on it.
 *
 * 4 warps of 32x32 (8x4 outputs a thread for thin_n, 4x8 for thin_m): per k a thread reads
 * three float4 from shared memory for 32 FMAs, between hopper_small's two for 16 and
 * splitk_8x8's four for 64. Three cp.async stages of BK = 16, no fragment prefetch.
 * Split-K (16-byte atomics) when the few tiles cannot fill the SMs. Predicted: about 45%
 * of the FMA peak on a full SM (a guess until the sweep measures it, see SGEMM_TILES). */
#ifndef CH05_SGEMM_THIN_CUH
#define CH05_SGEMM_THIN_CUH

#include "sgemm_pipelined.cuh"

typedef SgemmConfig<32, 128, 16, 4, 8, 8, 3> SgemmThinMCfg; /* warps of 8x4 threads, 4x8 each */
typedef SgemmConfig<128, 32, 16, 8, 4, 4, 3> SgemmThinNCfg; /* warps of 4x8 threads, 8x4 each */

static inline void sgemm_thin_m(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    sgemm_pipelined_launch<SgemmThinMCfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

static inline void sgemm_thin_n(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    sgemm_pipelined_launch<SgemmThinNCfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

#endif
