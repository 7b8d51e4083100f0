/* Chapter 05, the fp32 ladder, step 2: coalesced. */
#ifndef CH05_FP32_02_COALESCED_CUH
#define CH05_FP32_02_COALESCED_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 2. coalesced: swap the roles of x and y. A warp now shares one row m (its A load is a
 * broadcast) and covers 32 neighbouring columns n: one 128-byte line of B per load and one
 * of C per store instead of 32 scattered sectors. */
__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float *A,
                                       const float *B, float beta, float *C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
    float *c = C + (size_t)m * N + n;
    *c = sgemm_axpby(alpha, acc, beta, c);
}

static inline void sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B,
                                   float beta, float *C)
{
    dim3 block(32, 32), grid(sgemm_ceil_div(N, 32), sgemm_ceil_div(M, 32));
    sgemm_coalesced_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

#endif
