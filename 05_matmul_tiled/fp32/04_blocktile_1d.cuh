/* Chapter 05, the fp32 ladder, step 4: blocktile_1d. */
#ifndef CH05_FP32_04_BLOCKTILE_1D_CUH
#define CH05_FP32_04_BLOCKTILE_1D_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 4. blocktile_1d: a 64x64 tile per block, K in steps of 8, 512 threads, each thread 8
 * outputs of one column. Per k a thread loads one B value and reuses it 8 times from a
 * register: 9 shared loads per 8 FMAs instead of 2 per FMA. */
#define SGEMM_1D_BM 64
#define SGEMM_1D_BN 64
#define SGEMM_1D_BK 8
#define SGEMM_1D_TM 8

__global__ void __launch_bounds__(512)
    sgemm_blocktile_1d_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    __shared__ float As[SGEMM_1D_BM][SGEMM_1D_BK];
    __shared__ float Bs[SGEMM_1D_BK][SGEMM_1D_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_1D_BM, n0 = blockIdx.x * SGEMM_1D_BN;
    int col = tid % SGEMM_1D_BN, row0 = (tid / SGEMM_1D_BN) * SGEMM_1D_TM;
    int a_m = tid / SGEMM_1D_BK, a_k = tid % SGEMM_1D_BK;
    int b_k = tid / SGEMM_1D_BN, b_n = tid % SGEMM_1D_BN;
    float acc[SGEMM_1D_TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += SGEMM_1D_BK) {
        int am = m0 + a_m, ak = k0 + a_k, bk = k0 + b_k, bn = n0 + b_n;
        As[a_m][a_k] = (am < M && ak < K) ? A[(size_t)am * K + ak] : 0.0f;
        Bs[b_k][b_n] = (bk < K && bn < N) ? B[(size_t)bk * N + bn] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_1D_BK; k++) {
            float b = Bs[k][col];
#pragma unroll
            for (int i = 0; i < SGEMM_1D_TM; i++) acc[i] += As[row0 + i][k] * b;
        }
        __syncthreads();
    }
    int n = n0 + col;
    for (int i = 0; i < SGEMM_1D_TM; i++) {
        int m = m0 + row0 + i;
        if (m < M && n < N) {
            float *c = C + (size_t)m * N + n;
            *c = sgemm_axpby(alpha, acc[i], beta, c);
        }
    }
}

static inline void sgemm_blocktile_1d(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_1D_BN), sgemm_ceil_div(M, SGEMM_1D_BM));
    sgemm_blocktile_1d_kernel<<<grid, SGEMM_1D_BM * SGEMM_1D_BN / SGEMM_1D_TM>>>(M, N, K, alpha, A,
                                                                                 B, beta, C);
    CHECK_LAUNCH();
}

#endif
