/* Exercise 6 (stretch): C with a few columns, A streamed once.
 *
 * Asked: for C with at most 8 columns (a tall A times a few vectors: 8192 x 4 x 8192, say)
 * every tile of the chapter computes at least 32 columns (thin_n's 128x32), so most of its
 * FMAs are thrown away, and each element of A is used only N times: the product is bound
 * by reading A from DRAM, like gemv is by reading B. Write a kernel for that shape class
 * that reads A once, coalesced, and keeps its sums in registers; make it correct for any
 * N (more columns: in chunks of 8, each chunk reading A again). Predict its time at
 * 8192 x 4 x 8192 from the bytes of A and the DRAM bandwidth, and compare with best
 * (which the model sends to thin_n with split-K there) and cuBLAS.
 *
 * Answer. A block of 256 threads owns 8 rows of C and (per launch) up to 8 columns. Thread
 * t walks k = t, t + 256, ...: per k it reads one float of each of the 8 rows of A (each
 * warp reads 128 contiguous bytes of a row: coalesced) and the row k of B's chunk (8
 * floats; B is K x 8 at most, small, and stays in L1 and L2), and does 64 FMAs into 64
 * accumulators. At the end the 256 threads' sums of each output are added: shuffles in each
 * warp, then the 8 warps' partial sums through shared memory, and 64 threads write the
 * 8 x 8 outputs with alpha and beta. A's bytes are read once per launch, B's once per
 * block from L2. At 8192 x 4 x 8192, A is 268 MB: about 80 (H100) and 56 (H200)
 * microseconds at the data-sheet DRAM bandwidths, a floor this kernel can approach only
 * with enough loads in flight (8 a thread per k, 16 warps an SM at 123 registers).
 * A tiled kernel does at least 8 times the FMAs there (32 columns for 4), at 128 FMAs a
 * cycle an SM. Check with `--check --kernel ex6_few_columns` and
 * `--bench -n 8192x4x8192,8192x8x8192,4096x1x4096 --kernel best,ex6_few_columns,cublas`. */
#ifndef CH05_SOLUTIONS_EX6_FEW_COLUMNS_CUH
#define CH05_SOLUTIONS_EX6_FEW_COLUMNS_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

#define EX6_ROWS 8      /* rows of C a block computes */
#define EX6_COLS 8      /* columns of C a launch computes */
#define EX6_THREADS 256 /* the k lanes of a block */

/* Rows m0 .. m0 + 7 of C, columns 0 .. cols - 1 (cols <= EX6_COLS) of the chunk that B and
 * C point at; B's and C's rows are ldb and ldc floats apart. */
__global__ void __launch_bounds__(EX6_THREADS)
    ex6_few_columns_kernel(int M, int cols, int K, float alpha, const float *A, const float *B,
                           int ldb, float beta, float *C, int ldc)
{
    __shared__ float part[EX6_THREADS / 32][EX6_ROWS * EX6_COLS];
    int m0 = blockIdx.x * EX6_ROWS;
    float acc[EX6_ROWS][EX6_COLS];
#pragma unroll
    for (int r = 0; r < EX6_ROWS; r++)
#pragma unroll
        for (int j = 0; j < EX6_COLS; j++) acc[r][j] = 0.0f;
    for (int k = threadIdx.x; k < K; k += EX6_THREADS) {
        float b[EX6_COLS];
        const float *brow = B + (size_t)k * ldb;
#pragma unroll
        for (int j = 0; j < EX6_COLS; j++) b[j] = j < cols ? __ldg(brow + j) : 0.0f;
#pragma unroll
        for (int r = 0; r < EX6_ROWS; r++) {
            float a = m0 + r < M ? __ldg(A + (size_t)(m0 + r) * K + k) : 0.0f;
#pragma unroll
            for (int j = 0; j < EX6_COLS; j++) acc[r][j] = fmaf(a, b[j], acc[r][j]);
        }
    }
    /* the sums of each output: over the 32 lanes of a warp, then over the 8 warps */
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int r = 0; r < EX6_ROWS; r++)
#pragma unroll
        for (int j = 0; j < EX6_COLS; j++) {
            float v = acc[r][j];
            for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
            if (lane == 0) part[warp][r * EX6_COLS + j] = v;
        }
    __syncthreads();
    if (threadIdx.x < EX6_ROWS * EX6_COLS) {
        int r = threadIdx.x / EX6_COLS, j = threadIdx.x % EX6_COLS;
        float s = 0.0f;
        for (int w = 0; w < EX6_THREADS / 32; w++) s += part[w][threadIdx.x];
        if (m0 + r < M && j < cols) {
            float *c = C + (size_t)(m0 + r) * ldc + j;
            *c = sgemm_axpby(alpha, s, beta, c);
        }
    }
}

/* Any N: one launch per chunk of 8 columns (each reads all of A again: correct everywhere,
 * fast only where N <= 8). */
static inline void ex6_few_columns(int M, int N, int K, float alpha, const float *A, const float *B,
                                   float beta, float *C)
{
    for (int n0 = 0; n0 < N; n0 += EX6_COLS) {
        int cols = N - n0 < EX6_COLS ? N - n0 : EX6_COLS;
        ex6_few_columns_kernel<<<sgemm_ceil_div(M, EX6_ROWS), EX6_THREADS>>>(
            M, cols, K, alpha, A, B + n0, N, beta, C + n0, N);
        CHECK_LAUNCH();
    }
}

#endif
