/* Chapter 05, thin_m and thin_n: the pipelined kernel of fp32/09_double_buffer.cuh with
 * tiles 32 wide in one direction, for C with few rows (thin_m: 32x128 tiles) or few columns
 * (thin_n: 128x32), and thin_n_8x8 (128x64, below). sgemm_best picks them through its model
 * (model.h).
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
#ifndef CH05_ANY_SHAPE_03_THIN_CUH
#define CH05_ANY_SHAPE_03_THIN_CUH

#include "05_matmul_tiled/fp32/10_hopper.cuh"

typedef SgemmConfig<32, 128, 16, 4, 8, 8, 3> SgemmThinMCfg; /* warps of 8x4 threads, 4x8 each */
typedef SgemmConfig<128, 32, 16, 8, 4, 4, 3> SgemmThinNCfg; /* warps of 4x8 threads, 8x4 each */
/* thin_n_8x8: splitk_8x8's 64x128 tile turned on its side, 128x64 (4 warps of 32x64, 8x8
 * outputs a thread), for C with 33 to 64 columns. thin_n's 32 columns cover such a C in
 * two tile columns, so every row of A is read twice, and its 8x4 outputs a thread take
 * three shared loads per 32 FMAs; here A is read once and a thread does 64 FMAs per four
 * shared loads. */
typedef SgemmConfig<128, 64, 16, 8, 8, 4, 3> SgemmThinN8x8Cfg;

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

static inline void sgemm_thin_n_8x8(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmThinN8x8Cfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

#endif
