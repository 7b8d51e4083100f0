/* Chapter 05, part two: split-K on Hopper (sm_90a only).
 *
 *   tc_wgmma_splitk_<t>      step 6's warp-specialized kernel (06_wgmma_ws.cuh) with 64x128
 *                            tiles and K split over a grid layer per range, the partial
 *                            products added into C (small C, long K: chapter 07). */
#ifndef CH05_TENSOR_CORES_09_WGMMA_SPLITK_CUH
#define CH05_TENSOR_CORES_09_WGMMA_SPLITK_CUH

#include "05_matmul_tiled/tensor_cores/06_wgmma_ws.cuh"

/* The split count for 64x128 tiles: about two blocks per SM in all (a 64-row tile keeps one
 * consumer warpgroup busy, so two of them share an SM), each layer at least 2 K-slices. */
static inline int tc_wgmma_splits(int M, int N, int K, int bk)
{
    int tiles = sgemm_ceil_div(M, 64) * sgemm_ceil_div(N, 128), k_tiles = sgemm_ceil_div(K, bk);
    int want = sgemm_ceil_div(2 * sgemm_sm_count(), tiles), most = k_tiles / 2;
    int s = want < most ? want : most;
    return s < 1 ? 1 : s;
}

/* 64x128 tiles, K split into `splits` grid layers (one layer: a plain store); the launch
 * rounds the count to one that leaves no layer empty. */
template <typename T> static inline void tc_wgmma_splitk_by(int M, int N, int K, float alpha,
                                                            const T *A, const T *Bt, float beta,
                                                            float *C, int splits)
{
    if (splits <= 1)
        tc_wgmma_ws_launch<T, 128, 1, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
    else
        tc_wgmma_ws_launch<T, 128, 1, TC_EPI_ADD>(M, N, K, alpha, A, Bt, beta, C, 0, splits);
}

/* The same with tc_wgmma_splits' count. */
template <typename T> static inline void
tc_wgmma_splitk(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    tc_wgmma_splitk_by(M, N, K, alpha, A, Bt, beta, C, tc_wgmma_splits(M, N, K, TcWgType<T>::BK));
}
static inline void tc_wgmma_splitk_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                        const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_splitk(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_splitk_tf32(int M, int N, int K, float alpha, const float *A,
                                        const float *Bt, float beta, float *C)
{
    tc_wgmma_splitk(M, N, K, alpha, A, Bt, beta, C);
}

#endif
