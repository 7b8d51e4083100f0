/* Exercise 2 (warm-up): v6 with one float4 per step, and the same loop with an int index.
 *
 * Asked: in v6, load one float4 per step of the grid-stride loop instead of two
 * (ex2_one_float4). Predict its bandwidth from Little's law, then look at the loop in the
 * SASS (cuobjdump -sass). Then change the loop's index from size_t to int (ex2_int_index)
 * and predict what the compiler does with it.
 *
 * Answer. With a size_t index the loop stays a loop: one LDG.E.128 per iteration, and the
 * add that needs it comes before the next load, so each thread has 16 bytes in flight,
 * 32 KB per SM at 2048 threads. Little's law asks an SM for its share of bandwidth x
 * latency: with about a microsecond of latency, some 33 KB on the H200 (4.4 TB/s over 132
 * SMs) and 23 KB on the H100 (3.0 TB/s). Expect a few percent below v6 on the H200, where
 * 32 KB leaves no margin, and no difference on the H100; chapter 04's gs_u1 (the same
 * loop in the single-pass kernel) measures both.
 * With an int index, nvcc -O3 unrolls the loop by 4 on its own: it computes the trip
 * count, runs trip % 4 iterations in a rolled loop, then a loop of four copies whose four
 * LDG.E.128 issue back to back (64 bytes in flight). A signed index may be assumed never
 * to overflow, so i += stride cannot wrap and the trip count is known on entry; an
 * unsigned one (size_t, unsigned int) wraps modulo 2^N by definition, so the compiler
 * cannot count the iterations beforehand and leaves the loop rolled. The int index is
 * safe here: i < n / 4 < 2^29, and i + stride stays far below 2^31. */
#ifndef CH03_EX2_ONE_FLOAT4_CUH
#define CH03_EX2_ONE_FLOAT4_CUH

#include "../kernels.cuh"

/* v6's loop with one float4 per step; the tail and the block's sum as in v6. */
__global__ void ex2_one_float4(const float *in, int n, float *partials)
{
    size_t n4 = (size_t)n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *in4 = (const float4 *)in;
    float acc = 0.0f;
    for (size_t i = first; i < n4; i += stride) acc += reduce_float4_sum(in4[i]);
    size_t tail = 4 * n4 + first;
    if (tail < (size_t)n) acc += in[tail];
    float total = reduce_block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

/* The same loop with an int index: nvcc unrolls it by 4. */
__global__ void ex2_int_index(const float *in, int n, float *partials)
{
    int n4 = n / 4;
    int stride = gridDim.x * blockDim.x;
    int first = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *in4 = (const float4 *)in;
    float acc = 0.0f;
    for (int i = first; i < n4; i += stride) acc += reduce_float4_sum(in4[i]);
    size_t tail = 4 * (size_t)n4 + first;
    if (tail < (size_t)n) acc += in[tail];
    float total = reduce_block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

/* v6's launcher for either kernel: one wave of blocks, then one block over the partials.
 * resident: the launcher's own cache of the occupancy query (0 until the first call). */
static inline void ex2_launch(ReducePassKernel kernel, int *resident, const float *in, int n,
                              float *out, const ReduceWorkspace *ws)
{
    if (*resident == 0) *resident = reduce_resident_blocks((const void *)kernel, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    int blocks = reduce_grid_stride_blocks(*resident, n);
    kernel<<<blocks, REDUCE_BLOCK>>>(in, n, blocks == 1 ? out : ws->partials);
    CHECK_LAUNCH();
    if (blocks == 1) return;
    kernel<<<1, REDUCE_BLOCK>>>(ws->partials, blocks, out);
    CHECK_LAUNCH();
}

static inline void ex2_launch_one_float4(const float *in, int n, float *out,
                                         const ReduceWorkspace *ws)
{
    static int resident = 0;
    ex2_launch(ex2_one_float4, &resident, in, n, out, ws);
}

static inline void ex2_launch_int_index(const float *in, int n, float *out,
                                        const ReduceWorkspace *ws)
{
    static int resident = 0;
    ex2_launch(ex2_int_index, &resident, in, n, out, ws);
}

#endif
