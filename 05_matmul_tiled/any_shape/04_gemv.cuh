/* Chapter 05, gemv: C with at most 8 rows, a matrix-vector product (M = 1) or a few of them.
 * sgemm_best picks it through its model (model.h) when M <= SGEMM_GEMV_ROWS.
 *
 * Why: with M = 1 each element of B is used once, one FMA per 4 bytes read, so the product
 * can only go as fast as B streams from DRAM. A tiled kernel is the wrong tool there: its
 * tile has 32 or more rows and computes all of them (31 of 32 FMAs thrown away), and it
 * stages B in shared memory for a reuse that never comes: thin_m with split-K streams B at
 * well under the DRAM bandwidth there.
 *
 * Here nothing is tiled. A block of 8 warps owns 128 columns: lane l holds 4 neighbouring
 * columns, a 16-byte load of B per k (the warp reads 512 contiguous bytes of a row of B),
 * and warp w takes every 8th k of the block's K range, four of them at a time, all four
 * loads issued before their FMAs. Each thread keeps M x 4 sums in registers; the 8 warps'
 * sums meet in shared memory at the end. K is cut into ranges (grid.y) until the GPU has
 * about 16 blocks per SM (sgemm_model_gemv_splits), and the ranges' sums meet in C by
 * atomics, as in split-K. The kernel is compiled for 1, 2, 4 and 8 rows: the sums and
 * loads of 8 rows take 106 registers a thread (2 blocks an SM), of one row 40 (6 blocks,
 * three times the loads in flight). M > 8 runs 8 rows at a time (correct, but B is read
 * once per 8 rows: slow, which is why sgemm_best never asks for it).
 */
#ifndef CH05_ANY_SHAPE_04_GEMV_CUH
#define CH05_ANY_SHAPE_04_GEMV_CUH

#include "05_matmul_tiled/fp32/00_common.cuh"
#include "05_matmul_tiled/any_shape/model.h" /* SGEMM_GEMV_ROWS, sgemm_model_gemv_splits */
#include "05_matmul_tiled/any_shape/epilogue_splitk.cuh"

#define SGEMM_GEMV_WARPS 8  /* k lanes of a block */
#define SGEMM_GEMV_COLS 128 /* columns of a block: 32 lanes x 4 */
#define SGEMM_GEMV_BATCH 4  /* k steps whose loads a thread has in flight together */

/* The 4 outputs of one row, added into C (split: C already holds beta * C) or stored. */
__device__ __forceinline__ void sgemm_gemv_out(float *C, int m, int n, int N, float alpha,
                                               float beta, bool c_vec, bool split, float4 sum)
{
    float *p = C + (size_t)m * N + n;
    if (!split) {
        const float acc[4] = {sum.x, sum.y, sum.z, sum.w};
        sgemm_store4(C, m, n, m + 1, N, c_vec, alpha, beta, acc);
    } else if (c_vec && n + 3 < N) {
        sgemm_atomic_add4(p,
                          make_float4(alpha * sum.x, alpha * sum.y, alpha * sum.z, alpha * sum.w));
    } else {
        const float v[4] = {sum.x, sum.y, sum.z, sum.w};
        for (int q = 0; q < 4 && n + q < N; q++) atomicAdd(p + q, alpha * v[q]);
    }
}

template <int ROWS> __global__ void __launch_bounds__(32 * SGEMM_GEMV_WARPS)
    sgemm_gemv_kernel(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                      float *C, bool b_vec, bool c_vec, int k_range)
{
    __shared__ float4 part[SGEMM_GEMV_WARPS][32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int n = blockIdx.x * SGEMM_GEMV_COLS + lane * 4;
    int k_begin = blockIdx.y * k_range, k_end = min(K, k_begin + k_range);
    float4 acc[ROWS];
#pragma unroll
    for (int m = 0; m < ROWS; m++) acc[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    /* SGEMM_GEMV_BATCH k steps at a time, every load of the batch before its FMAs: a load
       issued after an FMA that waits for the previous load waits too, so one load at a
       time would leave one 16-byte load in flight a thread, half of what DRAM needs. */
    for (int k0 = k_begin + warp; k0 < k_end; k0 += SGEMM_GEMV_WARPS * SGEMM_GEMV_BATCH) {
        float4 b[SGEMM_GEMV_BATCH];
        float a[SGEMM_GEMV_BATCH][ROWS];
#pragma unroll
        for (int u = 0; u < SGEMM_GEMV_BATCH; u++) {
            int k = k0 + u * SGEMM_GEMV_WARPS;
            bool in = k < k_end;
            b[u] = in ? sgemm_load4(B, k, n, K, N, b_vec) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int m = 0; m < ROWS; m++) /* the same address across the warp */
                a[u][m] = in && m < M ? A[(size_t)m * K + k] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < SGEMM_GEMV_BATCH; u++)
#pragma unroll
            for (int m = 0; m < ROWS; m++) {
                acc[m].x = fmaf(a[u][m], b[u].x, acc[m].x);
                acc[m].y = fmaf(a[u][m], b[u].y, acc[m].y);
                acc[m].z = fmaf(a[u][m], b[u].z, acc[m].z);
                acc[m].w = fmaf(a[u][m], b[u].w, acc[m].w);
            }
    }
    bool split = gridDim.y > 1;
#pragma unroll
    for (int m = 0; m < ROWS; m++) {
        if (m >= M) break;
        part[warp][lane] = acc[m];
        __syncthreads();
        if (warp == 0 && n < N) {
            float4 s = part[0][lane];
            for (int w = 1; w < SGEMM_GEMV_WARPS; w++) {
                float4 t = part[w][lane];
                s.x += t.x, s.y += t.y, s.z += t.z, s.w += t.w;
            }
            sgemm_gemv_out(C, m, n, N, alpha, beta, c_vec, split, s);
        }
        __syncthreads();
    }
}

/* Up to 8 rows of C in one launch (C = beta * C first in a launch of its own when K is split
 * and beta != 1, as split-K does). */
static inline void sgemm_gemv_rows(int M, int N, int K, float alpha, const float *A, const float *B,
                                   float beta, float *C)
{
    int splits = sgemm_model_gemv_splits(N, K, sgemm_sm_count());
    int k_range = sgemm_ceil_div(K, splits);
    if (splits > 1 && beta != 1.0f) sgemm_scale(C, (size_t)M * N, beta);
    dim3 grid(sgemm_ceil_div(N, SGEMM_GEMV_COLS), splits);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B), c_vec = N % 4 == 0 && sgemm_aligned16(C);
    const int threads = 32 * SGEMM_GEMV_WARPS;
    if (M == 1)
        sgemm_gemv_kernel<1>
            <<<grid, threads>>>(M, N, K, alpha, A, B, beta, C, b_vec, c_vec, k_range);
    else if (M == 2)
        sgemm_gemv_kernel<2>
            <<<grid, threads>>>(M, N, K, alpha, A, B, beta, C, b_vec, c_vec, k_range);
    else if (M <= 4)
        sgemm_gemv_kernel<4>
            <<<grid, threads>>>(M, N, K, alpha, A, B, beta, C, b_vec, c_vec, k_range);
    else
        sgemm_gemv_kernel<SGEMM_GEMV_ROWS>
            <<<grid, threads>>>(M, N, K, alpha, A, B, beta, C, b_vec, c_vec, k_range);
    CHECK_LAUNCH();
}

static inline void sgemm_gemv(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    for (int m = 0; m < M; m += SGEMM_GEMV_ROWS) {
        int rows = M - m < SGEMM_GEMV_ROWS ? M - m : SGEMM_GEMV_ROWS;
        sgemm_gemv_rows(rows, N, K, alpha, A + (size_t)m * K, B, beta, C + (size_t)m * N);
    }
}

#endif
