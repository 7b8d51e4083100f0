/* Chapter 05, steps 1-5 of the fp32 ladder: naive, coalesced, smem, blocktile_1d and
 * blocktile_2d. Plain loads and stores, one thread per output up to step 3, then a column
 * (step 4) and a tile (step 5) of outputs per thread held in registers. */
#ifndef CH05_SGEMM_BASIC_CUH
#define CH05_SGEMM_BASIC_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* ---------------------------------------------------------------------------------------
 * 1. naive: thread (x, y) of a 32x32 block computes C[m][n] with m from threadIdx.x. The
 * 32 threads of a warp have 32 different m, so each load of A touches 32 rows K floats
 * apart (32 sectors for 128 useful bytes) and each store of C 32 rows apart. */
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float *A,
                                   const float *B, float beta, float *C)
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

static inline void sgemm_coalesced(int M, int N, int K, float alpha, const float *A,
                                   const float *B, float beta, float *C)
{
    dim3 block(32, 32), grid(sgemm_ceil_div(N, 32), sgemm_ceil_div(M, 32));
    sgemm_coalesced_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* 3. smem: the block loads a 32x32 tile of A and of B into shared memory once and every
 * thread reads 32 values of each from there, so global (L1/L2) traffic drops 32-fold.
 * Out-of-range elements are loaded as zeros, which adds nothing to the sums. */
#define SGEMM_SMEM_TILE 32

__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float *A,
                                  const float *B, float beta, float *C)
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

/* 4. blocktile_1d: a 64x64 tile per block, K in steps of 8, 512 threads, each thread 8
 * outputs of one column. Per k a thread loads one B value and reuses it 8 times from a
 * register: 9 shared loads per 8 FMAs instead of 2 per FMA. */
#define SGEMM_1D_BM 64
#define SGEMM_1D_BN 64
#define SGEMM_1D_BK 8
#define SGEMM_1D_TM 8

__global__ void __launch_bounds__(512) sgemm_blocktile_1d_kernel(int M, int N, int K, float alpha,
                                                                 const float *A, const float *B,
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
    sgemm_blocktile_1d_kernel<<<grid, SGEMM_1D_BM * SGEMM_1D_BN / SGEMM_1D_TM>>>(M, N, K, alpha,
                                                                                A, B, beta, C);
    CHECK_LAUNCH();
}

/* 5. blocktile_2d: a 128x128 tile per block, 256 threads, each an 8x8 tile. Per k a thread
 * loads 8 values of A and 8 of B into registers and does 64 FMAs with them (16 loads per 64
 * FMAs), and each block reads every element of A and B half as often as step 4. */
#define SGEMM_2D_BM 128
#define SGEMM_2D_BN 128
#define SGEMM_2D_BK 8
#define SGEMM_2D_T 8
#define SGEMM_2D_THREADS (SGEMM_2D_BM * SGEMM_2D_BN / (SGEMM_2D_T * SGEMM_2D_T))

__global__ void __launch_bounds__(SGEMM_2D_THREADS) sgemm_blocktile_2d_kernel(
    int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
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
