/* Chapter 05, what every version of the fp32 ladder shares: the launcher type of the
 * contract (see kernels.cuh), the alpha/beta epilogue, the tile count of a shape, the two
 * device queries the launchers and sgemm_best ask (SM count, shared memory per block), and
 * the 16-byte load and store helpers of steps 6-10, and the C = beta * C pass of split-K. */
#ifndef CH05_FP32_00_COMMON_CUH
#define CH05_FP32_00_COMMON_CUH

#include <stdint.h>

#include "common/cuda_utils.cuh"

typedef void (*SgemmLauncher)(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C);

static inline int sgemm_ceil_div(int a, int b) { return (a + b - 1) / b; }

/* The epilogue of every version. beta == 0 must not read C: 0 * NaN would be NaN. */
__device__ __forceinline__ float sgemm_axpby(float alpha, float acc, float beta, const float *c)
{
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

static inline int sgemm_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* C = beta * C (C = 0 when beta == 0, so garbage in C never reaches the sums): what a
 * split-K launch does to C before its partial products are added into it. On sm_90 it lets
 * the next launch start at once (griddepcontrol.launch_dependents): a kernel launched as its
 * programmatic dependent (any_shape/02_streamk.cuh) runs its main loop meanwhile and waits for C
 * (griddepcontrol.wait) only before its first atomic. Other launches wait as always. */
__global__ void sgemm_scale_kernel(float *C, size_t n, float beta)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

static inline void sgemm_scale(float *C, size_t n, float beta)
{
    size_t blocks = (n + 255) / 256;
    sgemm_scale_kernel<<<(int)(blocks < 1024 ? blocks : 1024), 256>>>(C, n, beta);
    CHECK_LAUNCH();
}

/* How many bm x bn tiles cover an M x N C. */
static inline long long sgemm_blocks(int M, int N, int bm, int bn)
{
    return (long long)sgemm_ceil_div(M, bm) * sgemm_ceil_div(N, bn);
}

static inline int sgemm_sm_count(void)
{
    static int sms = 0;
    if (sms == 0) sms = current_device_attribute(cudaDevAttrMultiProcessorCount);
    return sms;
}

/* The most shared memory one block may use on this GPU once it opts in: 227 KB on
 * Hopper, 163 KB on the A100, about 99 KB on most GeForce cards. */
static inline int sgemm_smem_limit(void)
{
    static int limit = 0;
    if (limit == 0) limit = current_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    return limit;
}

/* ---------------------------------------------------------------------------------------
 * Helpers of the vectorized versions. A float4 of A (4 consecutive k of one row m) or of B
 * (4 consecutive n of one row k) is read with one 16-byte load when it lies inside the
 * matrix and the rows allow it (vec: row length % 4 == 0 and a 16-byte aligned base);
 * otherwise element by element, zeros outside the matrix. */
__device__ __forceinline__ float4 sgemm_load4(const float *base, int row, int col, int rows,
                                              int cols, bool vec)
{
    const float *p = base + (size_t)row * cols + col;
    if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (vec && col + 3 < cols) return *(const float4 *)p;
    float4 v;
    v.x = col < cols ? p[0] : 0.0f;
    v.y = col + 1 < cols ? p[1] : 0.0f;
    v.z = col + 2 < cols ? p[2] : 0.0f;
    v.w = col + 3 < cols ? p[3] : 0.0f;
    return v;
}

/* Writes the 4 neighbouring outputs v of row m from column n: one 16-byte store when
 * allowed, else element by element inside the matrix. */
__device__ __forceinline__ void sgemm_write4(float *C, int m, int n, int M, int N, bool vec,
                                             float4 v)
{
    if (m >= M) return;
    float *c = C + (size_t)m * N + n;
    if (vec && n + 3 < N) {
        *(float4 *)c = v;
        return;
    }
    const float w[4] = {v.x, v.y, v.z, v.w};
    for (int q = 0; q < 4 && n + q < N; q++) c[q] = w[q];
}

/* alpha * acc[0..3] + beta * old (old not used when beta == 0: it may be garbage). */
__device__ __forceinline__ float4 sgemm_axpby4(float alpha, const float *acc, float beta,
                                               float4 old)
{
    float4 v = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
    if (beta != 0.0f) {
        v.x += beta * old.x;
        v.y += beta * old.y;
        v.z += beta * old.z;
        v.w += beta * old.w;
    }
    return v;
}

/* Writes alpha*acc + beta*C for 4 neighbouring outputs of row m starting at column n,
 * reading them first (beta != 0 only). */
__device__ __forceinline__ void sgemm_store4(float *C, int m, int n, int M, int N, bool vec,
                                             float alpha, float beta, const float *acc)
{
    float4 old = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (beta != 0.0f) old = sgemm_load4(C, m, n, M, N, vec);
    sgemm_write4(C, m, n, M, N, vec, sgemm_axpby4(alpha, acc, beta, old));
}

#endif
