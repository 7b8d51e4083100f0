/* Chapter 05, the fp32 ladder, step 5: blocktile_2d. */
#ifndef CH05_FP32_05_BLOCKTILE_2D_CUH
#define CH05_FP32_05_BLOCKTILE_2D_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 5. blocktile_2d: a 128x128 tile per block, 256 threads, each an 8x8 tile. Per k a thread
 * loads 8 values of A and 8 of B into registers and does 64 FMAs with them (16 loads per 64
 * FMAs), and each block reads every element of A and B half as often as step 4. */
#define SGEMM_2D_BM 128
#define SGEMM_2D_BN 128
#define SGEMM_2D_BK 8
#define SGEMM_2D_T 8
#define SGEMM_2D_THREADS (SGEMM_2D_BM * SGEMM_2D_BN / (SGEMM_2D_T * SGEMM_2D_T))

__global__ void __launch_bounds__(SGEMM_2D_THREADS)
    sgemm_blocktile_2d_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    __shared__ float As[SGEMM_2D_BM][SGEMM_2D_BK];
    __shared__ float Bs[SGEMM_2D_BK][SGEMM_2D_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_2D_BM, n0 = blockIdx.x * SGEMM_2D_BN;
    int row0 = (tid / (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    int col0 = (tid % (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    float acc[SGEMM_2D_T][SGEMM_2D_T] = {{0.0f}};
    float a[SGEMM_2D_T], b[SGEMM_2D_T];
    for (int k0 = 0; k0 < K; k0 += SGEMM_2D_BK) {
        for (int i = tid; i < SGEMM_2D_BM * SGEMM_2D_BK; i += SGEMM_2D_THREADS) {
            int m = i / SGEMM_2D_BK, k = i % SGEMM_2D_BK;
            As[m][k] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * K + k0 + k] : 0.0f;
        }
        for (int i = tid; i < SGEMM_2D_BK * SGEMM_2D_BN; i += SGEMM_2D_THREADS) {
            int k = i / SGEMM_2D_BN, n = i % SGEMM_2D_BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * N + n0 + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_2D_BK; k++) {
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++) a[i] = As[row0 + i][k];
#pragma unroll
            for (int j = 0; j < SGEMM_2D_T; j++) b[j] = Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++)
#pragma unroll
                for (int j = 0; j < SGEMM_2D_T; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < SGEMM_2D_T; i++) {
        int m = m0 + row0 + i;
        if (m >= M) break;
        for (int j = 0; j < SGEMM_2D_T; j++) {
            int n = n0 + col0 + j;
            if (n < N) {
                float *c = C + (size_t)m * N + n;
                *c = sgemm_axpby(alpha, acc[i][j], beta, c);
            }
        }
    }
}

static inline void sgemm_blocktile_2d(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_2D_BN), sgemm_ceil_div(M, SGEMM_2D_BM));
    sgemm_blocktile_2d_kernel<<<grid, SGEMM_2D_THREADS>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

#endif
