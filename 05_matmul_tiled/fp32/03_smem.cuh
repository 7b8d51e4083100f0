/* Chapter 05, the fp32 ladder, step 3: smem. */
#ifndef CH05_FP32_03_SMEM_CUH
#define CH05_FP32_03_SMEM_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 3. smem: the block loads a 32x32 tile of A and of B into shared memory once and every
 * thread reads 32 values of each from there, so global (L1/L2) traffic drops 32-fold.
 * Out-of-range elements are loaded as zeros, which adds nothing to the sums. */
#define SGEMM_SMEM_TILE 32

__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                                  float beta, float *C)
{
    __shared__ float As[SGEMM_SMEM_TILE][SGEMM_SMEM_TILE];
    __shared__ float Bs[SGEMM_SMEM_TILE][SGEMM_SMEM_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int n = blockIdx.x * SGEMM_SMEM_TILE + tx;
    int m = blockIdx.y * SGEMM_SMEM_TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += SGEMM_SMEM_TILE) {
        As[ty][tx] = (m < M && k0 + tx < K) ? A[(size_t)m * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && n < N) ? B[(size_t)(k0 + ty) * N + n] : 0.0f;
        __syncthreads();
        for (int k = 0; k < SGEMM_SMEM_TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (m < M && n < N) {
        float *c = C + (size_t)m * N + n;
        *c = sgemm_axpby(alpha, acc, beta, c);
    }
}

static inline void sgemm_smem(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    dim3 block(SGEMM_SMEM_TILE, SGEMM_SMEM_TILE);
    dim3 grid(sgemm_ceil_div(N, SGEMM_SMEM_TILE), sgemm_ceil_div(M, SGEMM_SMEM_TILE));
    sgemm_smem_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

#endif
