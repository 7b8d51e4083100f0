/* Chapter 05, part two, step 15: skinny products at any K, without TMA and without a copy.
 *
 *   tc_mma_skinny_<t>  step 4's mma.sync kernel (02_mma.cuh) with 128x128 tiles, 3 stages
 *                      (96 KB: two blocks, 8 warps an SM), and K split over grid layers until
 *                      the SMs hold one round of blocks, the layers' products added into C.
 *
 * Where it pays. A product with one short side (M or N of a few dozen) and a long K does
 * little arithmetic per byte: each element of the long operand is used min(M, N) times, so
 * the product should last about as long as reading that operand once. Where its rows cannot
 * be described by TMA (K not a multiple of 4 for TF32), the padded plan of step 10 first
 * copies it, a read and a write more: three times the bytes of the product alone; and
 * step 4's 128x256 tiles give such a C a few dozen blocks for 132 SMs. This kernel reads the
 * rows as they are, with 4-byte cp.async row by row (01_wmma.cuh), and splits K so that a C
 * of a few dozen tiles still gives every SM two blocks. Its costs: each layer adds its tile
 * into C with atomics, and C = beta * C first, one more launch (C is small on these shapes,
 * so both are too); and on a short side below 128 the tile multiplies zeros.
 *
 * bf16 is built and checked too, but tc_best never runs it: a bf16 row of odd K is not
 * 4-byte aligned, so its element-wise copy goes through registers and each thread waits for
 * its loads (01_wmma.cuh), and on every skinny shape of the sweep the padded plan is faster.
 *
 * Prediction, H100, TF32 at 33 x 7391 x 4502: the padded plan moves the long operand (133
 * MB) three times, about 130 us at the DRAM peak; this kernel once, 40 us, while its 232
 * blocks (58 tiles x 4 layers, two an SM) need about 60 us of mma.sync at step 4's measured
 * efficiency: near 60 us. tc_best (best.cuh) weighs it against the other plans through the
 * model (model.h). */
#ifndef CH05_TENSOR_CORES_15_MMA_SKINNY_CUH
#define CH05_TENSOR_CORES_15_MMA_SKINNY_CUH

#include "05_matmul_tiled/tensor_cores/02_mma.cuh"

template <typename T> using TcSkinnyCfg = TcMmaCfg<T, 128, 128, 3, true, true>;

/* Blocks of the skinny kernel an SM holds. */
template <typename T> static inline int tc_mma_skinny_occupancy(void)
{
    static int blocks = 0;
    if (blocks == 0) {
        typedef TcSkinnyCfg<T> Cfg;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, tc_mma_kernel_ready<Cfg, TC_EPI_ADD>(), Cfg::THREADS, Cfg::SMEM_BYTES));
        if (blocks < 1) blocks = 1;
    }
    return blocks;
}

/* The split count: as many layers as fit the GPU's SMs in one round of blocks (one more
 * would start a second round), each layer at least 2 K-slices. */
template <typename T> static inline int tc_mma_skinny_splits(int M, int N, int K)
{
    int tiles = sgemm_ceil_div(M, 128) * sgemm_ceil_div(N, 128);
    int want = tc_mma_skinny_occupancy<T>() * sgemm_sm_count() / tiles;
    int most = sgemm_ceil_div(K, TcSkinnyCfg<T>::BK) / 2;
    int s = want < most ? want : most;
    return s < 1 ? 1 : s;
}

template <typename T> static inline void tc_mma_skinny_by(int M, int N, int K, float alpha,
                                                          const T *A, const T *Bt, float beta,
                                                          float *C, int splits)
{
    tc_mma_launch<TcSkinnyCfg<T>>(M, N, K, alpha, A, Bt, beta, C, splits);
}

template <typename T> static inline void tc_mma_skinny(int M, int N, int K, float alpha, const T *A,
                                                       const T *Bt, float beta, float *C)
{
    tc_mma_skinny_by(M, N, K, alpha, A, Bt, beta, C, tc_mma_skinny_splits<T>(M, N, K));
}
static inline void tc_mma_skinny_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                      const bf16 *Bt, float beta, float *C)
{
    tc_mma_skinny(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_mma_skinny_tf32(int M, int N, int K, float alpha, const float *A,
                                      const float *Bt, float beta, float *C)
{
    tc_mma_skinny(M, N, K, alpha, A, Bt, beta, C);
}

#endif
