/* Chapter 05, the fp32 ladder, step 1: naive. Steps 1-5 use plain loads and stores, one
 * thread per output up to step 3, then a column (step 4) and a tile (step 5) of outputs
 * per thread held in registers. */
#ifndef CH05_FP32_01_NAIVE_CUH
#define CH05_FP32_01_NAIVE_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 1. naive: thread (x, y) of a 32x32 block computes C[m][n] with m from threadIdx.x. The
 * 32 threads of a warp have 32 different m, so each load of A touches 32 rows K floats
 * apart (32 sectors for 128 useful bytes) and each store of C 32 rows apart. */
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                                   float beta, float *C)
{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    int n = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
    float *c = C + (size_t)m * N + n;
    *c = sgemm_axpby(alpha, acc, beta, c);
}

static inline void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B,
                               float beta, float *C)
{
    dim3 block(32, 32), grid(sgemm_ceil_div(M, 32), sgemm_ceil_div(N, 32));
    sgemm_naive_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

#endif
