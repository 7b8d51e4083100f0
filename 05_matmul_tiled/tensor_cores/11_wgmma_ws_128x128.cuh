/* Chapter 05, part two, step 11: a smaller tile for the last round (sm_90a only).
 *
 *   tc_wgmma_ws_128x128_<t>  step 6's warp-specialized kernel (06_wgmma_ws.cuh) with 128x128
 *                            tiles: the same producer and two consumer warpgroups, each
 *                            consumer 64 x 128 of C (64 accumulators a thread, so no
 *                            register shift), a block per tile.
 *
 * Why a smaller tile can be faster. The GPU runs one 128x256 block per SM at a time, so a C
 * of T tiles takes ceil(T / SMs) rounds, and the last round runs with T mod SMs SMs busy (or
 * all of them). 4097 x 4097 makes 33 x 17 = 561 tiles of 128x256: 4.25 rounds of 132 SMs,
 * run as 5, the fifth a quarter full; and the 17th column of tiles holds one column of C.
 * In 128x128 tiles it makes 33 x 33 = 1089: 8.25 rounds of half the work each, run as 9, the
 * same work in 4.5 rounds of the big tile instead of 5. The price: each tile reads its A
 * rows and Bt rows for half as many outputs (a third more bytes from L2 per flop than
 * 128x256), and an epilogue and a pipeline fill for every half as much work. Which wins
 * depends on the shape; tc_best's model (model.h) counts both. */
#ifndef CH05_TENSOR_CORES_11_WGMMA_WS_128X128_CUH
#define CH05_TENSOR_CORES_11_WGMMA_WS_128X128_CUH

#include "05_matmul_tiled/tensor_cores/06_wgmma_ws.cuh"

static inline void tc_wgmma_ws_128x128_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                            const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 128, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}
static inline void tc_wgmma_ws_128x128_tf32(int M, int N, int K, float alpha, const float *A,
                                            const float *Bt, float beta, float *C)
{
    tc_wgmma_ws_launch<float, 128, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}

#endif
