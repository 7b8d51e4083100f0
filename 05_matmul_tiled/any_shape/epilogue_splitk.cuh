/* Chapter 05: how a split-K block leaves its tile. K is cut into ranges, one grid layer each,
 * and every layer's partial product is added into C (which already holds beta * C) with
 * atomics: one float at a time, or (sm_90) four neighbouring floats with one vector atomic.
 * fp32/09_double_buffer.cuh's kernel picks one of these as its epilogue (SGEMM_EPI_ATOMIC,
 * SGEMM_EPI_ATOMIC4); 01_splitk.cuh's versions run it. */
#ifndef CH05_ANY_SHAPE_EPILOGUE_SPLITK_CUH
#define CH05_ANY_SHAPE_EPILOGUE_SPLITK_CUH

#include "05_matmul_tiled/fp32/08_warptile.cuh"

/* Split-K's epilogue: adds alpha * acc into C, which already holds beta * C. (The rows and
 * columns below are sgemm_acc_row's and sgemm_acc_col's, written out: through those helpers
 * the split-K kernels compile to a different instruction order, not timed yet.) */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_atomic_add(float *C, int M, int N, float alpha,
                                                      float (&acc)[Cfg::TM][Cfg::TN], int m, int n)
{
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++) {
        int r = m + (i / 4) * Cfg::WTR * 4 + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < Cfg::TN; j++) {
            int c = n + (j / 4) * Cfg::WTC * 4 + j % 4;
            if (c < N) atomicAdd(C + (size_t)r * N + c, alpha * acc[i][j]);
        }
    }
}

/* sm_90 adds four neighbouring floats with one vector atomic (red.global.add.v4.f32): a
 * quarter of the atomic operations. Older GPUs add them one by one. p is 16-byte aligned. */
__device__ __forceinline__ void sgemm_atomic_add4(float *p, float4 v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float4 *)p, v);
#else
    atomicAdd(p, v.x);
    atomicAdd(p + 1, v.y);
    atomicAdd(p + 2, v.z);
    atomicAdd(p + 3, v.w);
#endif
}

/* The same with 16-byte atomics where C's rows allow them (c_vec); otherwise 4-byte ones,
 * each float4 first moved across the lanes of its row (sgemm_lanes_to_rows) so that a
 * warp's atomics land on neighbouring floats. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_atomic_add4(float *C, int M, int N, float alpha,
                                                       bool c_vec, float (&acc)[Cfg::TM][Cfg::TN],
                                                       int m, int n)
{
    int first = sgemm_rows_first<Cfg>(n), room = N - first; /* columns left in C */
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++) {
        int r = m + (i / 4) * Cfg::WTR * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++) {
            int c = n + j * Cfg::WTC * 4;
            const float *a = &acc[i][4 * j];
            if (c_vec) {
                if (r < M && c < N)
                    sgemm_atomic_add4(
                        C + (size_t)r * N + c,
                        make_float4(alpha * a[0], alpha * a[1], alpha * a[2], alpha * a[3]));
                continue;
            }
            float t[4];
            sgemm_lanes_to_rows<Cfg>(a, t);
            float *row = C + (size_t)r * N + first;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int d = j * Cfg::WTC * 4 + q * Cfg::WTC;
                if (r < M && d < room) atomicAdd(row + d, alpha * t[q]);
            }
        }
    }
}

#endif
