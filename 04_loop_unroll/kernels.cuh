/* Chapter 04: loop unrolling, on chapter 03's sum and on a compute-bound polynomial.
 *
 * The sum (every version gives the full sum; the ReduceLauncher signature of chapter 03):
 *   k{2,4,8,16}_tree  each thread adds K elements a block apart, then 03's shared-memory tree
 *                     (K = 2 is 03's v4); several passes
 *   k16_last_warp     K = 16, the tree's last warp finished with shuffles, without barriers
 *   k16_template      K = 16, block size a template parameter: the whole tree unrolled
 *   gs_u4_rolled      grid-stride single pass, an inner loop of 4 float4 loads kept rolled
 *   gs_u{1,2,4,8,16}  the same with the inner loop unrolled (#pragma unroll): U loads in flight
 *
 * The polynomial y[i] = p(x_i), degree UNROLL_POLY_DEGREE by Horner's rule (a chain of
 * dependent FMAs), x_i = -1 + i * (2/n):
 *   poly_k{1,2,4,8,16}  each thread evaluates K elements at once: K independent chains
 *   poly_k1_full        one chain per thread, but 16 times as many threads
 * Every name here starts with unroll_ / UNROLL_. */
#ifndef CH04_KERNELS_CUH
#define CH04_KERNELS_CUH

#include "03_reduction/kernels.cuh"

/* ---- the sum: K data blocks per thread -------------------------------------------- */

/* Each thread adds K elements a block apart before the tree (K = 2 is 03's v4). The loop
 * has a compile-time trip count, so nvcc unrolls it by itself: the K loads are issued
 * back to back and are in flight together; a block covers K * 256 elements, so there are
 * K times fewer blocks, partial sums and trees. */
template <int K>
static __device__ __forceinline__ float unroll_load_k(const float *in, int n, size_t base)
{
    float v = 0.0f;
    for (int j = 0; j < K; j++) {
        size_t i = base + (size_t)j * blockDim.x;
        if (i < (size_t)n) v += in[i];
    }
    return v;
}

template <int K> __global__ void unroll_k_tree(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    sdata[tid] = unroll_load_k<K>(in, n, (size_t)blockIdx.x * (K * blockDim.x) + tid);
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sdata[0];
}

template <int K> static inline void unroll_launch_k_tree(const float *in, int n, float *out,
                                                         const ReduceWorkspace *ws)
{
    reduce_multi_pass(unroll_k_tree<K>, K * REDUCE_BLOCK, in, n, out, ws);
}

/* k16_last_warp: the tree loop stops at 64 values and one warp finishes with five
 * shuffles (03's reduce_warp_sum, whose constant-count loop nvcc unrolls): six fewer
 * block-wide barriers and shared-memory round trips per block. */
template <int K> __global__ void unroll_last_warp(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    sdata[tid] = unroll_load_k<K>(in, n, (size_t)blockIdx.x * (K * blockDim.x) + tid);
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        float v = reduce_warp_sum(sdata[tid] + sdata[tid + 32]);
        if (tid == 0) partials[blockIdx.x] = v;
    }
}

template <int K> static inline void unroll_launch_last_warp(const float *in, int n, float *out,
                                                            const ReduceWorkspace *ws)
{
    reduce_multi_pass(unroll_last_warp<K>, K * REDUCE_BLOCK, in, n, out, ws);
}

/* k16_template: the block size is a template parameter, so every level of the tree is
 * written out and each `if (BLOCK >= ...)` is decided by the compiler: no loop counter,
 * no loop branch, and the strides of the K loads are constants folded into addresses. */
template <int BLOCK, int K>
__global__ void unroll_template_block(const float *in, int n, float *partials)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    size_t base = (size_t)blockIdx.x * (K * BLOCK) + tid;
    float v = 0.0f;
#pragma unroll
    for (int j = 0; j < K; j++)
        if (base + (size_t)j * BLOCK < (size_t)n) v += in[base + (size_t)j * BLOCK];
    sdata[tid] = v;
    __syncthreads();
    if (BLOCK >= 1024) {
        if (tid < 512) sdata[tid] += sdata[tid + 512];
        __syncthreads();
    }
    if (BLOCK >= 512) {
        if (tid < 256) sdata[tid] += sdata[tid + 256];
        __syncthreads();
    }
    if (BLOCK >= 256) {
        if (tid < 128) sdata[tid] += sdata[tid + 128];
        __syncthreads();
    }
    if (BLOCK >= 128) {
        if (tid < 64) sdata[tid] += sdata[tid + 64];
        __syncthreads();
    }
    if (tid < 32) {
        v = reduce_warp_sum(sdata[tid] + sdata[tid + 32]);
        if (tid == 0) partials[blockIdx.x] = v;
    }
}

template <int K> static inline void unroll_launch_template_block(const float *in, int n, float *out,
                                                                 const ReduceWorkspace *ws)
{
    reduce_multi_pass(unroll_template_block<REDUCE_BLOCK, K>, K * REDUCE_BLOCK, in, n, out, ws);
}

/* ---- the sum: grid-stride, single pass, an unrolled inner loop ------------------------ */

/* 03's v7 with its step made an inner loop of U float4 loads a grid apart. UNROLLED:
 * `#pragma unroll` copies the body U times, so all U loads are issued before the first
 * add needs its data (U * 16 bytes in flight per thread). Not UNROLLED: `#pragma unroll
 * 1` keeps the loop, and each add waits for its own load before the next load issues.
 * The outer loop is kept rolled in both, so U alone sets the loads in flight. */
template <int U, bool UNROLLED> __global__ void
unroll_grid_stride(const float *in, int n, float *out, float *partials, unsigned int *counter)
{
    size_t n4 = (size_t)n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *in4 = (const float4 *)in;
    float acc = 0.0f;
#pragma unroll 1
    for (size_t base = first; base < n4; base += U * stride) {
        if (UNROLLED) {
            float4 v[U];
#pragma unroll
            for (int j = 0; j < U; j++) {
                size_t i = base + j * stride;
                v[j] = i < n4 ? in4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int j = 0; j < U; j++) acc += reduce_float4_sum(v[j]);
        } else {
#pragma unroll 1
            for (int j = 0; j < U; j++) {
                size_t i = base + j * stride;
                if (i < n4) acc += reduce_float4_sum(in4[i]);
            }
        }
    }
    size_t tail = 4 * n4 + first;
    if (tail < (size_t)n) acc += in[tail];
    reduce_finish_last_block(reduce_block_sum(acc), partials, counter, out);
}

/* One wave of resident blocks: more registers per thread (large U) means fewer blocks
 * per SM, and the occupancy query sizes the grid to match. */
template <int U, bool UNROLLED> static inline void
unroll_launch_grid_stride(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0)
        resident =
            reduce_resident_blocks((const void *)unroll_grid_stride<U, UNROLLED>, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    unroll_grid_stride<U, UNROLLED><<<reduce_grid_stride_blocks(resident, n), REDUCE_BLOCK>>>(
        in, n, out, ws->partials, ws->counter);
    CHECK_LAUNCH();
}

/* ---- the compute-bound example: a polynomial per element ---------------------------- */

#define UNROLL_POLY_DEGREE 128
#define UNROLL_POLY_BLOCK 128 /* the low-occupancy launch: one block, 4 warps, per SM */

/* Coefficients c_0 .. c_D in constant memory: every thread reads the same one at the same
 * time, which the constant cache broadcasts, and an FMA takes it as a direct operand. */
__constant__ float unroll_poly_coef[UNROLL_POLY_DEGREE + 1];

typedef void (*PolyLauncher)(float *y, int n, float h);

static inline void unroll_poly_set_coefficients(const float *c)
{
    CUDA_CHECK(cudaMemcpyToSymbol(unroll_poly_coef, c, sizeof(float) * (UNROLL_POLY_DEGREE + 1)));
}

/* x_i = -1 + i * h, rounded once (the CPU computes the same float with fmaf). */
static __device__ __forceinline__ float unroll_poly_x(size_t i, float h)
{
    return __fmaf_rn((float)i, h, -1.0f);
}

/* p(x) by Horner's rule: UNROLL_POLY_DEGREE FMAs, each needing the one before. */
static __device__ __forceinline__ float unroll_poly_horner(float x)
{
    float p = unroll_poly_coef[UNROLL_POLY_DEGREE];
#pragma unroll
    for (int d = UNROLL_POLY_DEGREE - 1; d >= 0; d--) p = __fmaf_rn(p, x, unroll_poly_coef[d]);
    return p;
}

/* Each thread evaluates K elements, a grid apart, side by side: one Horner chain is a
 * sequence of dependent FMAs (about 4 cycles apart), but the K chains are independent,
 * so the scheduler can issue an FMA of another chain every cycle. The main loop only
 * takes groups whose K elements all exist, so every result is stored unconditionally
 * (with `if (i < n)` on each store, nvcc moves each chain into its own branch and runs
 * them one after another); a thread's last < K elements go one at a time. Both loops are
 * kept rolled, so K alone sets the chains in flight. */
template <int K> __global__ void unroll_poly(float *y, int n, float h)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t base = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (; base + (K - 1) * stride < (size_t)n; base += K * stride) {
        float x[K], p[K];
#pragma unroll
        for (int j = 0; j < K; j++) {
            x[j] = unroll_poly_x(base + j * stride, h);
            p[j] = unroll_poly_coef[UNROLL_POLY_DEGREE];
        }
#pragma unroll
        for (int d = UNROLL_POLY_DEGREE - 1; d >= 0; d--)
#pragma unroll
            for (int j = 0; j < K; j++) p[j] = __fmaf_rn(p[j], x[j], unroll_poly_coef[d]);
#pragma unroll
        for (int j = 0; j < K; j++) y[base + j * stride] = p[j];
    }
#pragma unroll 1
    for (; base < (size_t)n; base += stride) y[base] = unroll_poly_horner(unroll_poly_x(base, h));
}

static inline int unroll_sm_count(void)
{
    return current_device_attribute(cudaDevAttrMultiProcessorCount);
}

/* poly_kK: one block of 128 threads per SM, i.e. one warp per scheduler, as a kernel gets
 * when its registers or shared memory keep occupancy low. */
template <int K> static inline void unroll_launch_poly(float *y, int n, float h)
{
    unroll_poly<K><<<unroll_sm_count(), UNROLL_POLY_BLOCK>>>(y, n, h);
    CHECK_LAUNCH();
}

/* poly_k1_full: one chain per thread at full occupancy (2048 threads per SM): the
 * parallelism comes from 16 warps per scheduler instead of from unrolling. */
static inline void unroll_launch_poly_full(float *y, int n, float h)
{
    static int resident = 0;
    if (resident == 0) resident = reduce_resident_blocks((const void *)unroll_poly<1>, 256);
    unroll_poly<1><<<resident, 256>>>(y, n, h);
    CHECK_LAUNCH();
}

#endif
