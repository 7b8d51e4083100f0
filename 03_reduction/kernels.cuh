/* Chapter 03: the sum of n floats, seven ways (Harris's ladder, with warp shuffles).
 *
 *   v1_divergent    interleaved addressing, tid % (2*stride): divergent warps
 *   v2_strided      interleaved addressing with a strided index: no divergence, bank conflicts
 *   v3_sequential   sequential addressing: conflict-free
 *   v4_first_add    each thread adds two elements while loading: half the blocks
 *   v5_warp_shuffle the last warp finishes with __shfl_down_sync, no barriers
 *   v6_grid_stride  a fixed grid, many elements per thread, float4 loads; a second pass of
 *                   one block
 *   v7_single_pass  v6 plus "last block done": one launch gives the final sum
 *
 * v1..v5 write one partial sum per block and are applied again to the partials until one
 * value is left (a few more launches, all inside the timed region). Every version has the
 * launcher signature ReduceLauncher, so the driver holds them in one table.
 *
 * For other chapters (chapter 07 includes this file):
 *   reduce_warp_sum(v)   __device__: sum over a full warp, result in lane 0
 *   reduce_block_sum(v)  __device__: sum over the block, result in thread 0
 *   reduce_workspace_alloc(&ws, max_n) / reduce_workspace_free(&ws)
 *   reduce_sum(d_in, n, d_out, &ws)   the fastest version here (v7): *d_out = sum of d_in[0..n)
 * Every name in this file starts with reduce_ / REDUCE_ (or Reduce). */
#ifndef CH03_KERNELS_CUH
#define CH03_KERNELS_CUH

#include <stdint.h>

#include "common/cuda_utils.cuh"

#define REDUCE_BLOCK 256 /* threads per block of every version here */
#define REDUCE_FULL_MASK 0xffffffffu

/* Device memory the launchers need besides input and output: two ping-pong buffers of
 * per-block partial sums (v1..v6) and the arrival counter of the single-pass finish (v7).
 * One sum at a time per workspace: the counter must not be shared by concurrent sums. */
typedef struct {
    float *partials;       /* capacity floats */
    float *partials2;      /* capacity floats */
    unsigned int *counter; /* zero between launches; the last block resets it */
    long long capacity;    /* ceil(max_n / REDUCE_BLOCK), at least 1 */
    long long max_n;       /* the largest n the workspace was made for */
} ReduceWorkspace;

typedef void (*ReduceLauncher)(const float *in, int n, float *out, const ReduceWorkspace *ws);

/* Allocates a workspace for sums of up to max_n floats (about max_n / 32 bytes). */
static inline void reduce_workspace_alloc(ReduceWorkspace *ws, long long max_n)
{
    ws->max_n = max_n < 1 ? 1 : max_n;
    ws->capacity = (ws->max_n + REDUCE_BLOCK - 1) / REDUCE_BLOCK;
    CUDA_CHECK(cudaMalloc(&ws->partials, (size_t)ws->capacity * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws->partials2, (size_t)ws->capacity * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws->counter, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(ws->counter, 0, sizeof(unsigned int)));
}

static inline void reduce_workspace_free(ReduceWorkspace *ws)
{
    CUDA_CHECK(cudaFree(ws->partials));
    CUDA_CHECK(cudaFree(ws->partials2));
    CUDA_CHECK(cudaFree(ws->counter));
    ws->partials = ws->partials2 = NULL;
    ws->counter = NULL;
}

/* ---- building blocks, shared with chapters 04 and 07 -------------------------------- */

/* Sum of v over the 32 lanes of a warp; every lane must call it; lane 0 gets the total.
 * Each step adds the value of the lane `offset` above, through registers: no shared
 * memory, no barrier. (The old "volatile shared memory" warp trick relied on lanes
 * running in lockstep, which Volta's independent thread scheduling no longer promises.) */
static __device__ __forceinline__ float reduce_warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(REDUCE_FULL_MASK, v, offset);
    return v;
}

/* Sum of v over the whole block; every thread must call it; thread 0 gets the total.
 * blockDim.x must be a multiple of 32 (at most 1024). Each warp reduces in registers,
 * lane 0 parks the warp's sum in shared memory, warp 0 adds those up: one barrier for
 * the block instead of one per tree level. The leading barrier lets a kernel call it
 * more than once (the previous call's readers are done before the slots are reused). */
static __device__ __forceinline__ float reduce_block_sum(float v)
{
    __shared__ float reduce_warp_totals[32];
    unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = reduce_warp_sum(v);
    __syncthreads();
    if (lane == 0) reduce_warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? reduce_warp_totals[lane] : 0.0f;
        v = reduce_warp_sum(v);
    }
    return v;
}

static __device__ __forceinline__ float reduce_float4_sum(float4 v)
{
    return (v.x + v.y) + (v.z + v.w);
}

/* One thread's share of a grid-stride sum over the first 4*(n/4) elements, as float4:
 * two loads (a grid apart) per step, both issued before either is added, so 32 bytes per
 * thread are in flight; then the first n % 4 threads of the grid add one tail element
 * each. in must be 16-byte aligned (cudaMalloc's pointers are). */
static __device__ __forceinline__ float reduce_thread_sum_float4(const float *in, int n)
{
    size_t n4 = (size_t)n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t tail = 4 * n4 + i;
    const float4 *in4 = (const float4 *)in;
    float acc = 0.0f;
    for (; i + stride < n4; i += 2 * stride) {
        float4 a = in4[i], b = in4[i + stride];
        acc += reduce_float4_sum(a) + reduce_float4_sum(b);
    }
    if (i < n4) acc += reduce_float4_sum(in4[i]);
    if (tail < (size_t)n) acc += in[tail];
    return acc;
}

/* The single-pass finish ("last block done"). Every thread of every block calls it with
 * the block's total in thread 0. Thread 0 stores the total in partials[blockIdx.x],
 * fences so the store is visible device-wide before it counts itself in, and takes a
 * ticket from the counter; the block that draws the last ticket knows every partial is
 * written, adds them up and writes *out, and sets the counter back to zero for the next
 * launch. One launch, deterministic order, no atomics on floats. */
static __device__ __forceinline__ void reduce_finish_last_block(float block_total, float *partials,
                                                                unsigned int *counter, float *out)
{
    __shared__ int reduce_is_last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block_total;
        __threadfence();
        unsigned int ticket = atomicAdd(counter, 1u);
        reduce_is_last = ticket == gridDim.x - 1;
        if (reduce_is_last) __threadfence(); /* the other blocks' partials before our reads */
    }
    __syncthreads();
    if (!reduce_is_last) return; /* the same for the whole block, so the barriers below are safe */
    float v = 0.0f;
    for (unsigned int i = threadIdx.x; i < gridDim.x; i += blockDim.x)
        v += __ldcg(&partials[i]); /* from L2: another SM's write is not in our L1 */
    v = reduce_block_sum(v);
    if (threadIdx.x == 0) {
        *out = v;
        *counter = 0;
    }
}

/* Blocks of `block` threads of `kernel` that fit on the whole GPU at once (one wave). */
static inline int reduce_resident_blocks(const void *kernel, int block)
{
    int sms = current_device_attribute(cudaDevAttrMultiProcessorCount), per_sm;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, 0));
    return sms * (per_sm > 0 ? per_sm : 1);
}

/* Grid of a grid-stride version: one wave, or fewer blocks when n is small
 * (each thread gets at least one float4). */
static inline int reduce_grid_stride_blocks(int resident, int n)
{
    long long needed = ((long long)n / 4 + REDUCE_BLOCK - 1) / REDUCE_BLOCK;
    return needed < 1 ? 1 : (needed < resident ? (int)needed : resident);
}

static inline void reduce_require_capacity(const ReduceWorkspace *ws, int n)
{
    if (n > ws->max_n) {
        fprintf(stderr, "reduce: n = %d exceeds the workspace's max_n = %lld\n", n, ws->max_n);
        exit(1);
    }
}

/* Runs a one-partial-per-block kernel again and again, each pass summing the previous
 * pass's partials (ping-pong between the two workspace buffers), until one block is
 * enough; that last pass writes *out. */
typedef void (*ReducePassKernel)(const float *in, int n, float *partials);

static inline void reduce_multi_pass(ReducePassKernel kernel, int elems_per_block, const float *in,
                                     int n, float *out, const ReduceWorkspace *ws)
{
    float *buf[2] = {ws->partials, ws->partials2};
    int which = 0;
    reduce_require_capacity(ws, n);
    for (;;) {
        int blocks = (int)(((long long)n + elems_per_block - 1) / elems_per_block);
        float *dst = blocks == 1 ? out : buf[which];
        kernel<<<blocks, REDUCE_BLOCK>>>(in, n, dst);
        CHECK_LAUNCH();
        if (blocks == 1) return;
        in = dst;
        n = blocks;
        which ^= 1;
    }
}

/* ---- the ladder --------------------------------------------------------------------- */

/* v1: each block loads 256 elements into shared memory and halves them in a tree: at
 * level s, thread tid adds sdata[tid + s] if tid is a multiple of 2s. The threads that
 * work are scattered through every warp, so at each level all 8 warps stay busy
 * (divergent branches) while fewer and fewer of their lanes do anything, and % is slow. */
__global__ void reduce_v1_divergent(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < (size_t)n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sdata[0];
}

static inline void reduce_launch_v1(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    reduce_multi_pass(reduce_v1_divergent, REDUCE_BLOCK, in, n, out, ws);
}

/* v2: the same tree, but the working threads are packed: thread tid handles index
 * 2*s*tid. Whole warps now retire together (no divergence, no %), but at level s the
 * lanes of a warp touch addresses 2s floats apart, so several lanes hit the same shared
 * memory bank and their accesses are serialized (bank conflicts). */
__global__ void reduce_v2_strided(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < (size_t)n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x) sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sdata[0];
}

static inline void reduce_launch_v2(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    reduce_multi_pass(reduce_v2_strided, REDUCE_BLOCK, in, n, out, ws);
}

/* v3: sequential addressing. Fold the upper half onto the lower half: thread tid < s adds
 * sdata[tid + s]. Consecutive lanes touch consecutive words, one per bank: no conflicts,
 * and the active threads are still packed into whole warps. */
__global__ void reduce_v3_sequential(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < (size_t)n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sdata[0];
}

static inline void reduce_launch_v3(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    reduce_multi_pass(reduce_v3_sequential, REDUCE_BLOCK, in, n, out, ws);
}

/* v4: in v3 half the threads are idle from the first tree level on. Here each block
 * covers 512 elements and every thread adds two of them (a block apart) while loading:
 * half as many blocks, twice the loads in flight per thread, the same tree. */
__global__ void reduce_v4_first_add(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * blockDim.x) + tid;
    float v = i < (size_t)n ? in[i] : 0.0f;
    if (i + blockDim.x < (size_t)n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = sdata[0];
}

static inline void reduce_launch_v4(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    reduce_multi_pass(reduce_v4_first_add, 2 * REDUCE_BLOCK, in, n, out, ws);
}

/* v5: once 64 values are left, one warp can finish alone. Its lanes exchange values
 * through registers with __shfl_down_sync, so the last six levels need no shared memory
 * round trips and no __syncthreads (a barrier for 256 threads to let 32 work). */
__global__ void reduce_v5_warp_shuffle(const float *in, int n, float *partials)
{
    __shared__ float sdata[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * blockDim.x) + tid;
    float v = i < (size_t)n ? in[i] : 0.0f;
    if (i + blockDim.x < (size_t)n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        v = reduce_warp_sum(sdata[tid] + sdata[tid + 32]);
        if (tid == 0) partials[blockIdx.x] = v;
    }
}

static inline void reduce_launch_v5(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    reduce_multi_pass(reduce_v5_warp_shuffle, 2 * REDUCE_BLOCK, in, n, out, ws);
}

/* v6: stop launching one block per 512 elements. A fixed grid (one wave of resident
 * blocks) walks the array in float4 steps, two float4 per thread per step (v4's "add two
 * while loading", now 32 bytes), each thread keeping a running sum in a register; only
 * then does the block reduce (shuffles first, one barrier) and write one partial. 2^28
 * floats make ~1000 partials instead of 2^19, and a second launch of the same kernel
 * with a single block adds those up. */
__global__ void reduce_v6_grid_stride(const float *in, int n, float *partials)
{
    float total = reduce_block_sum(reduce_thread_sum_float4(in, n));
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

static inline void reduce_launch_v6(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0)
        resident = reduce_resident_blocks((const void *)reduce_v6_grid_stride, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    int blocks = reduce_grid_stride_blocks(resident, n);
    reduce_v6_grid_stride<<<blocks, REDUCE_BLOCK>>>(in, n, blocks == 1 ? out : ws->partials);
    CHECK_LAUNCH();
    if (blocks == 1) return;
    reduce_v6_grid_stride<<<1, REDUCE_BLOCK>>>(ws->partials, blocks, out);
    CHECK_LAUNCH();
}

/* v7: v6 without the second launch. The last block to finish adds the partials itself
 * (reduce_finish_last_block), so a whole sum is one kernel launch: for mid-sized arrays,
 * where a launch costs a noticeable fraction of the time, that is the difference. */
__global__ void reduce_v7_single_pass(const float *in, int n, float *out, float *partials,
                                      unsigned int *counter)
{
    float total = reduce_block_sum(reduce_thread_sum_float4(in, n));
    reduce_finish_last_block(total, partials, counter, out);
}

static inline void reduce_launch_v7(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0)
        resident = reduce_resident_blocks((const void *)reduce_v7_single_pass, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    reduce_v7_single_pass<<<reduce_grid_stride_blocks(resident, n), REDUCE_BLOCK>>>(
        in, n, out, ws->partials, ws->counter);
    CHECK_LAUNCH();
}

/* The sum for other chapters: *out = in[0] + ... + in[n-1] (float, n >= 1), one launch on
 * the default stream, asynchronous like any launch. in: device pointer, 16-byte aligned
 * (any cudaMalloc'd pointer is); out: device pointer to one float; ws: from
 * reduce_workspace_alloc with max_n >= n, not used by another sum at the same time. */
static inline void reduce_sum(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    if ((uintptr_t)in % 16 != 0) {
        fprintf(stderr, "reduce_sum: the input must be 16-byte aligned\n");
        exit(1);
    }
    reduce_launch_v7(in, n, out, ws);
}

#endif
