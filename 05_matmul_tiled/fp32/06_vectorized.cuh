/* Chapter 05, the fp32 ladder, step 6: vectorized. One kernel template (step 5 with
 * 16-byte loads and A transposed in shared memory) whose only parameter is the padding of
 * the transposed A: 0 here, 4 in step 7 (07_padded.cuh). */
#ifndef CH05_FP32_06_VECTORIZED_CUH
#define CH05_FP32_06_VECTORIZED_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* 6. vectorized (APAD = 0; step 7, padded, is APAD = 4). Step 5 with 16-byte global loads
 * and stores, and A stored transposed (As[k][m]) so the 8 values of A a thread needs per k
 * are contiguous: two 16-byte shared loads instead of eight 4-byte ones, for A and for B. */
#define SGEMM_V_BM 128
#define SGEMM_V_BN 128
#define SGEMM_V_BK 8
#define SGEMM_V_T 8
#define SGEMM_V_THREADS 256

template <int APAD> __global__ void __launch_bounds__(SGEMM_V_THREADS)
    sgemm_vectorized_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                            float beta, float *C, bool a_vec, bool b_vec, bool c_vec)
{
    __shared__ __align__(16) float As[SGEMM_V_BK][SGEMM_V_BM + APAD];
    __shared__ __align__(16) float Bs[SGEMM_V_BK][SGEMM_V_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_V_BM, n0 = blockIdx.x * SGEMM_V_BN;
    int row0 = (tid / (SGEMM_V_BN / SGEMM_V_T)) * SGEMM_V_T;
    int col0 = (tid % (SGEMM_V_BN / SGEMM_V_T)) * SGEMM_V_T;
    int a_m = tid / (SGEMM_V_BK / 4), a_k = (tid % (SGEMM_V_BK / 4)) * 4; /* 128 x 2 float4 */
    int b_k = tid / (SGEMM_V_BN / 4), b_n = (tid % (SGEMM_V_BN / 4)) * 4; /* 8 x 32 float4 */
    float acc[SGEMM_V_T][SGEMM_V_T] = {{0.0f}};
    float a[SGEMM_V_T], b[SGEMM_V_T];
    for (int k0 = 0; k0 < K; k0 += SGEMM_V_BK) {
        float4 av = sgemm_load4(A, m0 + a_m, k0 + a_k, M, K, a_vec);
        float4 bv = sgemm_load4(B, k0 + b_k, n0 + b_n, K, N, b_vec);
        As[a_k + 0][a_m] = av.x;
        As[a_k + 1][a_m] = av.y;
        As[a_k + 2][a_m] = av.z;
        As[a_k + 3][a_m] = av.w;
        *(float4 *)&Bs[b_k][b_n] = bv;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_V_BK; k++) {
#pragma unroll
            for (int i = 0; i < SGEMM_V_T; i += 4)
                *(float4 *)&a[i] = *(const float4 *)&As[k][row0 + i];
#pragma unroll
            for (int j = 0; j < SGEMM_V_T; j += 4)
                *(float4 *)&b[j] = *(const float4 *)&Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < SGEMM_V_T; i++)
#pragma unroll
                for (int j = 0; j < SGEMM_V_T; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < SGEMM_V_T; i++)
        for (int j = 0; j < SGEMM_V_T; j += 4)
            sgemm_store4(C, m0 + row0 + i, n0 + col0 + j, M, N, c_vec, alpha, beta, &acc[i][j]);
}

template <int APAD> static inline void sgemm_vectorized_launch(int M, int N, int K, float alpha,
                                                               const float *A, const float *B,
                                                               float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_V_BN), sgemm_ceil_div(M, SGEMM_V_BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    sgemm_vectorized_kernel<APAD>
        <<<grid, SGEMM_V_THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec, b_vec, c_vec);
    CHECK_LAUNCH();
}

static inline void sgemm_vectorized(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    sgemm_vectorized_launch<0>(M, N, K, alpha, A, B, beta, C);
}

#endif
