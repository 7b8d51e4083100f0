/* Exercise 6 (stretch): a more accurate sum at the same speed (compensated summation).
 *
 * Asked: v7 is as fast as CUB; make it more accurate instead. Each thread's running sum is
 * the longest chain of additions (about n / (4 * threads) of them, a hundred and more at
 * 2^28), so give it Kahan's compensation: keep the rounding error of every addition in a
 * second register and feed it back into the next one. Predict the time against v7, and
 * the random input's error at 2^28 (--check prints it) against v7's.
 *
 * Answer. Per element the thread does four additions instead of one; the kernel reads 4
 * bytes per element from DRAM in the time the SM could do hundreds of additions, so
 * expect v7's time within the noise. The thread's own chain then contributes an error of
 * about 2 u of its inputs' magnitude instead of up to (its length) x u, and what is left
 * comes from the block and grid trees (about 20 levels): the random input's error at
 * 2^28 should drop by an order of magnitude or more. nvcc keeps the compensation because
 * it does not reassociate float additions (no --use_fast_math here: with it, the
 * compiler may simplify (t - sum) - y to 0 and the compensation is gone). */
#ifndef CH03_EX6_KAHAN_CUH
#define CH03_EX6_KAHAN_CUH

#include "../kernels.cuh"

/* *sum += x, with the rounding error of the addition kept in *comp (Kahan). */
static __device__ __forceinline__ void ex6_kahan_add(float *sum, float *comp, float x)
{
    float y = x - *comp;
    float t = *sum + y;
    *comp = (t - *sum) - y;
    *sum = t;
}

static __device__ __forceinline__ void ex6_kahan_add4(float *sum, float *comp, float4 v)
{
    ex6_kahan_add(sum, comp, v.x);
    ex6_kahan_add(sum, comp, v.y);
    ex6_kahan_add(sum, comp, v.z);
    ex6_kahan_add(sum, comp, v.w);
}

/* reduce_thread_sum_float4 with every addition compensated: two float4 a grid apart per
 * step, both loaded before either is added, then the n % 4 tail. */
static __device__ __forceinline__ float ex6_thread_sum_kahan(const float *in, int n)
{
    size_t n4 = (size_t)n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t tail = 4 * n4 + i;
    const float4 *in4 = (const float4 *)in;
    float sum = 0.0f, comp = 0.0f;
    for (; i + stride < n4; i += 2 * stride) {
        float4 a = in4[i], b = in4[i + stride];
        ex6_kahan_add4(&sum, &comp, a);
        ex6_kahan_add4(&sum, &comp, b);
    }
    if (i < n4) ex6_kahan_add4(&sum, &comp, in4[i]);
    if (tail < (size_t)n) ex6_kahan_add(&sum, &comp, in[tail]);
    return sum;
}

/* v7 with the compensated per-thread sum. */
__global__ void ex6_kahan(const float *in, int n, float *out, float *partials,
                          unsigned int *counter)
{
    float total = reduce_block_sum(ex6_thread_sum_kahan(in, n));
    reduce_finish_last_block(total, partials, counter, out);
}

static inline void ex6_launch_kahan(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0) resident = reduce_resident_blocks((const void *)ex6_kahan, REDUCE_BLOCK);
    reduce_require_capacity(ws, n);
    ex6_kahan<<<reduce_grid_stride_blocks(resident, n), REDUCE_BLOCK>>>(in, n, out, ws->partials,
                                                                        ws->counter);
    CHECK_LAUNCH();
}

#endif
