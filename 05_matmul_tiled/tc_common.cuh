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

#include "common/cuda_utils.cuh"

typedef __nv_bfloat16 bf16;

typedef void (*TcBf16Launcher)(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                               float beta, float *C);
typedef void (*TcTf32Launcher)(int M, int N, int K, float alpha, const float *A, const float *Bt,
                               float beta, float *C);

static inline int tc_ceil_div(int a, int b) { return (a + b - 1) / b; }
static inline int tc_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* C = beta * C, or C = 0 when beta == 0 (so NaN in C never reaches a split-K sum). */
__global__ void tc_scale_kernel(float *C, size_t n, float beta)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

/* Before a split-K launch adds its partial products into C: C = beta * C, skipped when
 * beta == 1 (C already is beta * C: a gradient accumulated into C). */
static inline void tc_prescale(float *C, int M, int N, float beta)
{
    if (beta == 1.0f) return;
    size_t n = (size_t)M * N;
    size_t blocks = (n + 255) / 256;
    tc_scale_kernel<<<(int)(blocks < 1024 ? blocks : 1024), 256>>>(C, n, beta);
    CHECK_LAUNCH();
}

static inline int tc_sm_count(void)
{
    static int sms = 0;
    if (sms == 0) {
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    return sms;
}

#endif
