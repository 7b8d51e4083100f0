/* Chapter 05, part two, step 7: the persistent kernel (sm_90a only).
 *
 *   tc_wgmma_persistent_<t>  step 6's warp-specialized kernel (06_wgmma_ws.cuh) with one block
 *                            per SM walking the tiles in an L2-friendly order: the producer
 *                            loads the next tile while the consumers store this one, and no
 *                            block launch sits between tiles. */
#ifndef CH05_TENSOR_CORES_07_WGMMA_PERSISTENT_CUH
#define CH05_TENSOR_CORES_07_WGMMA_PERSISTENT_CUH

#include "05_matmul_tiled/tensor_cores/06_wgmma_ws.cuh"

static inline void tc_wgmma_persistent_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                            const bf16 *Bt, float beta, float *C)
{
    int blocks = sgemm_sm_count(); /* one per SM */
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, blocks, 1);
}
static inline void tc_wgmma_persistent_tf32(int M, int N, int K, float alpha, const float *A,
                                            const float *Bt, float beta, float *C)
{
    int blocks = sgemm_sm_count(); /* one per SM */
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, blocks, 1);
}

#endif
