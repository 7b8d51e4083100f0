/* Chapter 05, the fp32 ladder, step 10: hopper, step 9's pipelined kernel with the tile
 * the parameter sweep chose (records/sweep.sh rebuilds it with other SGEMM_TUNED_* values,
 * given with -D), and hopper_small, the same kernel with 64x64 tiles for shapes too small
 * to fill the GPU with the large ones. */
#ifndef CH05_FP32_10_HOPPER_CUH
#define CH05_FP32_10_HOPPER_CUH

#include "05_matmul_tiled/fp32/09_double_buffer.cuh"

/* The sweep's winner on an H200; records/sweep.sh overrides it with -DSGEMM_TUNED_BM=... */
#ifndef SGEMM_TUNED_BM
#define SGEMM_TUNED_BM 128
#define SGEMM_TUNED_BN 256
#define SGEMM_TUNED_BK 32
#define SGEMM_TUNED_TM 8
#define SGEMM_TUNED_TN 16
#define SGEMM_TUNED_WTR 8
#define SGEMM_TUNED_STAGES 3
#define SGEMM_TUNED_FRAG_PIPE 1
#endif
typedef SgemmConfig<SGEMM_TUNED_BM, SGEMM_TUNED_BN, SGEMM_TUNED_BK, SGEMM_TUNED_TM, SGEMM_TUNED_TN,
                    SGEMM_TUNED_WTR, SGEMM_TUNED_STAGES, SGEMM_TUNED_FRAG_PIPE>
    SgemmHopperCfg;
/* 64x64 tiles, 4x4 per thread, 256 threads: four times the blocks of a 128x128 tile. */
typedef SgemmConfig<64, 64, 16, 4, 4, 8, 2> SgemmSmallCfg;

static inline void sgemm_hopper(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    sgemm_pipelined_launch<SgemmHopperCfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

static inline void sgemm_hopper_small(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmSmallCfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

#endif
