/* Chapter 05, part two: tc_best_bf16 and tc_best_tf32, the tensor-core versions to call
 * (chapter 07's tensor-core trainers do). Same contract as every tensor-core version
 * (common.cuh). They pick:
 *   - on a Hopper GPU with an sm_90a build, when TMA can describe A and Bt (16-byte row
 *     strides and bases): when the 128x256 tiles make at least half a wave (tiles >= SMs / 2),
 *     tc_wgmma_persistent up to 8 waves and tc_wgmma_ws beyond (with a few waves the
 *     persistent kernel's overlapped epilogue wins; with many, the hardware's block
 *     scheduler, which hands the next tile to whichever SM frees first, beats the
 *     persistent kernel's fixed round-robin); below half a wave tc_wgmma_splitk (64x128
 *     tiles, K split to fill the SMs), which measured about as fast as the persistent
 *     kernel at half a wave, faster below and slower above;
 *   - everywhere else (an older GPU, or K not a multiple of 8 for bf16 / 4 for tf32, or an
 *     unaligned pointer): tc_mma_pipeline, which takes any shape. */
#ifndef CH05_TENSOR_CORES_BEST_CUH
#define CH05_TENSOR_CORES_BEST_CUH

#include "05_matmul_tiled/tensor_cores/04_mma_pipeline.cuh"
#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"
#include "05_matmul_tiled/tensor_cores/09_wgmma_splitk.cuh"

/* Whether the Hopper path applies to this call (see above). */
template <typename T> static inline bool tc_use_wgmma(int K, const T *A, const T *Bt)
{
    return !tc_wgmma_unavailable() && !tc_tma_refusal(K, sizeof(T), A, Bt);
}

/* How many waves of 128x256 tiles (one tile per SM per wave) C makes. */
static inline double tc_big_tile_waves(int M, int N)
{
    return (double)sgemm_ceil_div(M, 128) * sgemm_ceil_div(N, 256) / sgemm_sm_count();
}

/* The choice above, for either input type; `pipeline` is that type's mma.sync pipeline. */
template <typename T> static inline void
tc_best(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C,
        void (*pipeline)(int, int, int, float, const T *, const T *, float, float *))
{
    double waves = tc_use_wgmma(K, A, Bt) ? tc_big_tile_waves(M, N) : -1.0;
    if (waves < 0.0)
        pipeline(M, N, K, alpha, A, Bt, beta, C);
    else if (waves > 8.0)
        tc_wgmma_ws_launch<T, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
    else if (waves >= 0.5)
        tc_wgmma_ws_launch<T, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C,
                                                    sgemm_sm_count(), 1);
    else
        tc_wgmma_splitk(M, N, K, alpha, A, Bt, beta, C);
}

/* The split count tc_best gives this product where it takes tc_wgmma_splitk; 0 where it
 * takes another path. (Chapter 07 times the counts around it inside its epoch's graph.) */
template <typename T> static inline int tc_best_splits(int M, int N, int K, const T *A, const T *Bt)
{
    if (!tc_use_wgmma(K, A, Bt) || tc_big_tile_waves(M, N) >= 0.5) return 0;
    return tc_wgmma_splits(M, N, K, TcWgType<T>::BK);
}

static inline void tc_best_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                float beta, float *C)
{
    tc_best(M, N, K, alpha, A, Bt, beta, C, tc_mma_pipeline_bf16);
}

static inline void tc_best_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                float beta, float *C)
{
    tc_best(M, N, K, alpha, A, Bt, beta, C, tc_mma_pipeline_tf32);
}

#endif
