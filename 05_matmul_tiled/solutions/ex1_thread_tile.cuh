/* Exercise 1 (warm-up): blocktile_2d with a thread tile of another aspect ratio.
 *
 * Asked: keep step 5's 128x128 block tile and K slices of 8, but give each thread an 8x4
 * (8 rows, 4 columns) or a 4x8 tile of C instead of 8x8; the block then has 512 threads
 * instead of 256. Before running, predict from the source: the registers a thread needs
 * (`nvcc -Xptxas -v`), the blocks and warps an SM holds, the shared loads per FMA, and
 * which of the three (8x8, 8x4, 4x8) is fastest.
 *
 * Answer. A thread holds TM x TN accumulators and TM + TN fragment values: 32 + 12 against
 * step 5's 64 + 16, so ptxas needs fewer registers than step 5's 162: 108 for 8x4 and 98
 * for 4x8 (-Xptxas -v, CUDA 13.0, sm_90a). 512 threads of 108 registers are 55,296 of the
 * SM's 65,536: still one block an SM, but of 16 warps instead of 8, so twice as many warps
 * hide the latency of the global loads and of the barrier before each slice, which is what
 * held step 5 back. The price is reuse: per k a thread reads 12 values for 32 FMAs against
 * 16 for 64. Shared memory has room for it: the lanes that share a row share its A values
 * (one broadcast), so a warp fetches 8 + 128 floats, 544 bytes, per k for its 1,024 FMAs,
 * about half a byte an FMA, against the byte an FMA that 128 bytes a cycle give 128 FMA
 * lanes. So the warps win: expect both faster than step 5. Between the two: with 8x4 the
 * 32 lanes of a warp share one row and read B as 32 neighbouring float4 (no bank
 * conflict); with 4x8 a warp covers two rows and its 16 column lanes read float4s 32 bytes
 * apart, step 5's 2-way conflict. So 8x4 should be the faster one. Check with `--bench
 * --kernel blocktile_2d,ex1_blocktile_8x4,ex1_blocktile_4x8,vectorized`.
 *
 * The kernel is step 5's with TM and TN as template parameters; the loads, the edge
 * handling and the epilogue are step 5's. */
#ifndef CH05_SOLUTIONS_EX1_THREAD_TILE_CUH
#define CH05_SOLUTIONS_EX1_THREAD_TILE_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

#define EX1_BM 128
#define EX1_BN 128
#define EX1_BK 8

/* A 128x128 tile per block, TM x TN outputs a thread, BM * BN / (TM * TN) threads. */
template <int TM, int TN> __global__ void __launch_bounds__(EX1_BM *EX1_BN / (TM * TN))
    ex1_blocktile_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C)
{
    constexpr int THREADS = EX1_BM * EX1_BN / (TM * TN);
    static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
    __shared__ float As[EX1_BM][EX1_BK];
    __shared__ float Bs[EX1_BK][EX1_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * EX1_BM, n0 = blockIdx.x * EX1_BN;
    int row0 = (tid / (EX1_BN / TN)) * TM;
    int col0 = (tid % (EX1_BN / TN)) * TN;
    float acc[TM][TN] = {{0.0f}};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += EX1_BK) {
        for (int i = tid; i < EX1_BM * EX1_BK; i += THREADS) {
            int m = i / EX1_BK, k = i % EX1_BK;
            As[m][k] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * K + k0 + k] : 0.0f;
        }
        for (int i = tid; i < EX1_BK * EX1_BN; i += THREADS) {
            int k = i / EX1_BN, n = i % EX1_BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * N + n0 + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < EX1_BK; k++) {
#pragma unroll
            for (int i = 0; i < TM; i++) a[i] = As[row0 + i][k];
#pragma unroll
            for (int j = 0; j < TN; j++) b[j] = Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; i++) {
        int m = m0 + row0 + i;
        if (m >= M) break;
        for (int j = 0; j < TN; j++) {
            int n = n0 + col0 + j;
            if (n < N) {
                float *c = C + (size_t)m * N + n;
                *c = sgemm_axpby(alpha, acc[i][j], beta, c);
            }
        }
    }
}

template <int TM, int TN> static inline void ex1_blocktile_launch(int M, int N, int K, float alpha,
                                                                  const float *A, const float *B,
                                                                  float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, EX1_BN), sgemm_ceil_div(M, EX1_BM));
    ex1_blocktile_kernel<TM, TN>
        <<<grid, EX1_BM * EX1_BN / (TM * TN)>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

static inline void ex1_blocktile_8x4(int M, int N, int K, float alpha, const float *A,
                                     const float *B, float beta, float *C)
{
    ex1_blocktile_launch<8, 4>(M, N, K, alpha, A, B, beta, C);
}

static inline void ex1_blocktile_4x8(int M, int N, int K, float alpha, const float *A,
                                     const float *B, float beta, float *C)
{
    ex1_blocktile_launch<4, 8>(M, N, K, alpha, A, B, beta, C);
}

#endif
