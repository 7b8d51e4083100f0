/* Chapter 05, part two, step 16: wider tiles, fewer L2 bytes a multiply-add (sm_90a only).
 *
 *   tc_wgmma_wide_bf16          the persistent kernel (07_wgmma_persistent.cuh) with 128x320
 *                               tiles: each consumer warpgroup holds 64x320 accumulators (160
 *                               a thread, an m64n256 and an m64n64 side by side), and a stage
 *                               loads 128 + 320 rows of 128 bytes for 128 x 320 products:
 *                               448 / 40960 bytes a product against 128x256's 384 / 32768,
 *                               6.7% less through the L2. Four stages of 56 KB take 224 of the
 *                               227 KB a block may have; Bt's 320 rows come in two TMA boxes.
 *   tc_wgmma_wide_cluster_bf16  the cluster kernel (08_wgmma_cluster.cuh) with the same tiles:
 *                               each block of a pair loads 160 of the 320 rows of Bt,
 *                               multicast to both. */
#ifndef CH05_TENSOR_CORES_16_WGMMA_WIDE_CUH
#define CH05_TENSOR_CORES_16_WGMMA_WIDE_CUH

#include "05_matmul_tiled/tensor_cores/08_wgmma_cluster.cuh"

#define TC_WIDE_BN 320

static inline void tc_wgmma_wide_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                      const bf16 *Bt, float beta, float *C)
{
    int blocks = sgemm_sm_count(); /* one per SM */
    tc_wgmma_ws_launch<bf16, TC_WIDE_BN, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, blocks,
                                                          1);
}

static inline void tc_wgmma_wide_cluster_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                              const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_cluster<bf16, TC_WIDE_BN>(M, N, K, alpha, A, Bt, beta, C);
}

#endif
