/* Exercise 4 (practice): gs_u4 with four accumulators.
 *
 * Asked: in gs_u4 every float4 is added into the one register acc, so the four adds of a
 * step form a chain, each waiting for the one before. Give each of the U loads its own
 * accumulator (acc[j] += sum of v[j]) and add the U accumulators after the loop. Predict
 * the speedup over gs_u4.
 *
 * Answer. None worth measuring: the chain of adds costs a few tens of cycles per step, while
 * the step's four loads take about a microsecond (thousands of cycles) to arrive. The warp
 * waits for its loads, not for its adds; splitting a chain helps where the chain is the
 * wait (the polynomial), not here. The ptxas schedule shows it: in gs_u4 the FADDs already
 * come after all four LDG.E.128, and the four accumulators only reorder them. */
#ifndef CH04_EX4_GS_U4_ACC4_CUH
#define CH04_EX4_GS_U4_ACC4_CUH

#include "../kernels.cuh"

/* unroll_grid_stride<U, true> with one accumulator per load of a step. */
template <int U> __global__ void ex4_grid_stride_accs(const float *in, int n, float *out,
                                                      float *partials, unsigned int *counter)
{
    size_t n4 = (size_t)n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4 *in4 = (const float4 *)in;
    float acc[U];
#pragma unroll
    for (int j = 0; j < U; j++) acc[j] = 0.0f;
#pragma unroll 1
    for (size_t base = first; base < n4; base += U * stride) {
        float4 v[U];
#pragma unroll
        for (int j = 0; j < U; j++) {
            size_t i = base + j * stride;
            v[j] = i < n4 ? in4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int j = 0; j < U; j++) acc[j] += reduce_float4_sum(v[j]);
    }
    float total = 0.0f;
#pragma unroll
    for (int j = 0; j < U; j++) total += acc[j];
    size_t tail = 4 * n4 + first;
    if (tail < (size_t)n) total += in[tail];
    reduce_finish_last_block(reduce_block_sum(total), partials, counter, out);
}

static inline void ex4_launch_gs_u4_acc4(const float *in, int n, float *out,
                                         const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0)
        resident = reduce_resident_blocks((const void *)ex4_grid_stride_accs<4>, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    ex4_grid_stride_accs<4><<<reduce_grid_stride_blocks(resident, n), REDUCE_BLOCK>>>(
        in, n, out, ws->partials, ws->counter);
    CHECK_LAUNCH();
}

#endif
