/* Chapter 05, part two, step 4: step 3's swizzled mma.sync kernel (02_mma.cuh) with a
 * 3-stage cp.async pipeline and 128x256 tiles, in bf16 and TF32: the portable fallback of
 * tc_best (best.cuh). */
#ifndef CH05_TENSOR_CORES_04_MMA_PIPELINE_CUH
#define CH05_TENSOR_CORES_04_MMA_PIPELINE_CUH

#include "05_matmul_tiled/tensor_cores/02_mma.cuh"

/* 4. pipeline: 3 stages of 128x256 tiles (48 KB a stage, 144 KB in all), 8 warps of
 * 64 x 64. The ring of cp.async copies keeps two slices in flight while one is multiplied,
 * so the global-memory latency hides behind the tensor cores instead of stalling each slice,
 * and the 256-wide tile cuts the bytes copied per flop by a quarter against 128x128 (each
 * row of A in shared memory feeds 256 columns), in L2 traffic and in shared-memory writes.
 * 226 registers a thread (240 in TF32): one block of 8 warps per SM. Prediction: 1.5-2x
 * over step 3.
 * Where it stops: shared memory still moves 128 bytes (ldmatrix) + ~48 (the copies) per
 * mma, about 1.4 cycles of its bandwidth per mma that the tensor cores could take in one,
 * and every operand passes through the register file warp by warp. wgmma (05_wgmma.cuh)
 * feeds the tensor cores from shared memory directly, for 4 warps at once: expect this
 * kernel near 60-70% of cuBLAS bf16 on an H100 (on an A100, where mma.sync is all there
 * is, this design is what cuBLAS itself runs).
 * GPUs whose blocks cannot have 144 KB of shared memory (sm_86, sm_89: 99 KB) get a
 * 128x128 tile with 3 stages (96 KB) instead. */
template <typename T> using TcMmaPipeCfg = TcMmaCfg<T, 128, 256, 3, true>;
template <typename T> using TcMmaPipeSmallCfg = TcMmaCfg<T, 128, 128, 3, true>;

template <typename T> static inline void tc_mma_pipeline_launch(int M, int N, int K, float alpha,
                                                                const T *A, const T *Bt, float beta,
                                                                float *C)
{
    if (TcMmaPipeCfg<T>::SMEM_BYTES <= sgemm_smem_limit())
        tc_mma_launch<TcMmaPipeCfg<T>>(M, N, K, alpha, A, Bt, beta, C);
    else
        tc_mma_launch<TcMmaPipeSmallCfg<T>>(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_mma_pipeline_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                        const bf16 *Bt, float beta, float *C)
{
    tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_mma_pipeline_tf32(int M, int N, int K, float alpha, const float *A,
                                        const float *Bt, float beta, float *C)
{
    tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C);
}

#endif
