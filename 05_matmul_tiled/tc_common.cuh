/* Chapter 05, part two: what every tensor-core version shares.
 *
 * THE CONTRACT of the tensor-core ladder (chapter 07's tensor-core trainers rely on it):
 *     void <name>(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
 *                 float *C);
 * computes C = alpha * A * B + beta * C with fp32 accumulation, where
 *   A  is M x K, row-major (each row of A is contiguous along K),
 *   Bt is B transposed: N x K, row-major (each column of B is contiguous along K),
 *   C  is M x N fp32, row-major,
 * all contiguous device pointers, asynchronous on the default stream. T is bf16 (the
 * `_bf16` versions) or fp32 read by the tensor cores as TF32 (the `_tf32` versions: the
 * low 13 bits of each input's mantissa are ignored). beta == 0 never reads C.
 *
 * Why B arrives transposed: a tensor-core instruction multiplies fragments that run along
 * K in both operands. With A and Bt both K-contiguous, every load of either operand is a
 * row segment of one matrix, the same code serves both, and Hopper's wgmma can read TF32
 * operands only in that layout. cuBLAS, the ceiling, is called with the same layout. */
#ifndef CH05_TC_COMMON_CUH
#define CH05_TC_COMMON_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "sgemm_common.cuh" /* ceil_div, aligned16, sm_count, the beta * C pass */

typedef __nv_bfloat16 bf16;

typedef void (*TcBf16Launcher)(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                               float beta, float *C);
typedef void (*TcTf32Launcher)(int M, int N, int K, float alpha, const float *A, const float *Bt,
                               float beta, float *C);

/* Before a split-K launch adds its partial products into C: C = beta * C, skipped when
 * beta == 1 (C already is beta * C: a gradient accumulated into C). */
static inline void tc_prescale(float *C, int M, int N, float beta)
{
    if (beta != 1.0f) sgemm_scale(C, (size_t)M * N, beta);
}

/* The epilogue every tensor-core version shares. */
/* alpha * (v0, v1) + beta * C into row r, columns c and c + 1: one 8-byte access where the
 * row allows it (pairs: N even and C 8-byte aligned), else one by one inside the matrix.
 * beta == 0 never reads C. */
__device__ __forceinline__ void tc_store_pair(float *C, int M, int N, int r, int c, float v0, float v1,
                                              float alpha, float beta, bool pairs)
{
    if (r >= M || c >= N) return;
    float *p = C + (size_t)r * N + c;
    float2 v = make_float2(alpha * v0, alpha * v1);
    bool both = c + 1 < N;
    if (pairs && both) {
        if (beta != 0.0f) {
            float2 old = *(const float2 *)p;
            v.x += beta * old.x, v.y += beta * old.y;
        }
        *(float2 *)p = v;
    } else {
        p[0] = beta == 0.0f ? v.x : v.x + beta * p[0];
        if (both) p[1] = beta == 0.0f ? v.y : v.y + beta * p[1];
    }
}

static inline bool tc_c_pairs(int N, const float *C) { return N % 2 == 0 && ((uintptr_t)C & 7) == 0; }

#endif
