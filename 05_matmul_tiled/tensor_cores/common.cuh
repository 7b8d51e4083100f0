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
#ifndef CH05_TENSOR_CORES_COMMON_CUH
#define CH05_TENSOR_CORES_COMMON_CUH

#include <cuda_bf16.h>
#include <stdint.h>
#include <stdlib.h>

#include "05_matmul_tiled/fp32/00_common.cuh" /* ceil_div, aligned16, sm_count, the beta * C pass */

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

/* Split-K's layers: the K-slices a layer when `slices` slices go to *splits layers, and
 * *splits rounded to the count that leaves no layer empty (model.h's tc_model_splits counts
 * the same way). */
static inline int tc_split_layers(int slices, int *splits)
{
    int per = sgemm_ceil_div(slices, *splits < 1 ? 1 : *splits);
    *splits = sgemm_ceil_div(slices, per);
    return per;
}

/* The epilogue every tensor-core version shares. A thread owns pairs of neighbouring
 * outputs (row r, columns c and c + 1); each pair is one 8-byte access where the row allows
 * it (pairs: N even and C 8-byte aligned), else one or two 4-byte ones inside the matrix. */

/* C's pair at (r, c), zeros outside the matrix. */
__device__ __forceinline__ float2 tc_load_pair(const float *C, int M, int N, int r, int c,
                                               bool pairs)
{
    float2 v = make_float2(0.0f, 0.0f);
    if (r >= M || c >= N) return v;
    const float *p = C + (size_t)r * N + c;
    if (pairs && c + 1 < N) return *(const float2 *)p;
    v.x = p[0];
    if (c + 1 < N) v.y = p[1];
    return v;
}

__device__ __forceinline__ void tc_put_pair(float *C, int M, int N, int r, int c, float2 v,
                                            bool pairs)
{
    if (r >= M || c >= N) return;
    float *p = C + (size_t)r * N + c;
    if (pairs && c + 1 < N) {
        *(float2 *)p = v;
        return;
    }
    p[0] = v.x;
    if (c + 1 < N) p[1] = v.y;
}

/* P pairs at once: alpha * v + beta * C, with every read of C issued before the first
 * write. Pair by pair, each read would wait a full memory latency behind the write before
 * it (the compiler cannot move a read of C above a write to C: they might overlap), and a
 * 64 x 256 tile of accumulators has 128 pairs a thread. beta == 0 never reads C. */
template <int P>
__device__ __forceinline__ void tc_store_pairs(float *C, int M, int N, const int (&r)[P],
                                               const int (&c)[P], const float2 (&v)[P], float alpha,
                                               float beta, bool pairs)
{
    float2 old[P];
#pragma unroll
    for (int p = 0; p < P; p++)
        old[p] = beta != 0.0f ? tc_load_pair(C, M, N, r[p], c[p], pairs) : make_float2(0.0f, 0.0f);
#pragma unroll
    for (int p = 0; p < P; p++)
        tc_put_pair(C, M, N, r[p], c[p],
                    make_float2(alpha * v[p].x + beta * old[p].x, alpha * v[p].y + beta * old[p].y),
                    pairs);
}

/* One pair (the epilogues that stage their tile through shared memory). */
__device__ __forceinline__ void tc_store_pair(float *C, int M, int N, int r, int c, float v0,
                                              float v1, float alpha, float beta, bool pairs)
{
    const int rr[1] = {r}, cc[1] = {c};
    const float2 vv[1] = {make_float2(v0, v1)};
    tc_store_pairs<1>(C, M, N, rr, cc, vv, alpha, beta, pairs);
}

/* How a tile leaves the kernel: stored as alpha * acc + beta * C, or (split-K) added. */
enum { TC_EPI_STORE, TC_EPI_ADD };

/* Split-K's epilogue: a pair added into C, with one 8-byte atomic where the row allows it
 * (the float2 atomicAdd exists from sm_90 on; older GPUs add the two floats one by one). */
__device__ __forceinline__ void tc_add_pair(float *C, int M, int N, int r, int c, float v0,
                                            float v1, bool pairs)
{
    if (r >= M || c >= N) return;
    float *p = C + (size_t)r * N + c;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (pairs && c + 1 < N) {
        atomicAdd((float2 *)p, make_float2(v0, v1));
        return;
    }
#endif
    (void)pairs;
    atomicAdd(p, v0);
    if (c + 1 < N) atomicAdd(p + 1, v1);
}

/* Scratch buffers on the GPU that grow as needed: two a set, one set for each SET (a number
 * the caller picks) and GPU, freed at exit. The current GPU's set, at least a_bytes and
 * b_bytes long (0: that buffer is not needed); *grown says whether either was reallocated
 * (its contents then undefined). False when a graph capture is under way (a capture cannot
 * allocate, and a graph holding the buffers would outlive their next growth) or on a GPU
 * past the 16th. Growing one frees the old buffer, which waits for the GPU: a timed loop
 * meets it in its warm-up. */
#define TC_SCRATCH_DEVICES 16
enum { TC_SCRATCH_PAD, TC_SCRATCH_STREAMK }; /* the sets: step 10's copies, step 17's workspace */
template <int SET> static inline bool tc_scratch_reserve(size_t a_bytes, size_t b_bytes, void **a,
                                                         void **b, bool *grown)
{
    static void *buf[TC_SCRATCH_DEVICES][2];
    static size_t have[TC_SCRATCH_DEVICES][2];
    static bool registered = false;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= TC_SCRATCH_DEVICES) return false;
    cudaStreamCaptureStatus capturing;
    CUDA_CHECK(cudaStreamIsCapturing(0, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return false;
    const size_t want[2] = {a_bytes, b_bytes};
    *grown = false;
    for (int i = 0; i < 2; i++) {
        if (want[i] <= have[dev][i]) continue;
        if (!registered) {
            atexit([] {
                for (int d = 0; d < TC_SCRATCH_DEVICES; d++)
                    for (int j = 0; j < 2; j++)
                        if (buf[d][j]) cudaFree(buf[d][j]);
            });
            registered = true;
        }
        if (buf[dev][i]) CUDA_CHECK(cudaFree(buf[dev][i]));
        buf[dev][i] = NULL, have[dev][i] = 0;
        CUDA_CHECK(cudaMalloc(&buf[dev][i], want[i]));
        have[dev][i] = want[i];
        *grown = true;
    }
    *a = buf[dev][0], *b = buf[dev][1];
    return true;
}

static inline bool tc_c_pairs(int N, const float *C)
{
    return N % 2 == 0 && ((uintptr_t)C & 7) == 0;
}

#endif
