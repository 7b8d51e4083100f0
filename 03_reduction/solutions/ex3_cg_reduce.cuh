/* Exercise 3 (practice): the whole block tree in warp shuffles, with cooperative groups.
 *
 * Asked: v5 still runs the tree's first two levels through shared memory, with a barrier
 * each. Write a version that keeps v5's load (two elements per thread) but reduces each
 * warp in registers with cooperative groups' cg::reduce(warp, v, cg::plus<float>()),
 * parks the eight warp sums in shared memory and lets warp 0 add them. Predict the step
 * over v5, and explain why __reduce_add_sync, the one-instruction warp sum, cannot do it.
 *
 * Answer. Each block now has one barrier instead of v5's three (after the load, after the
 * levels s = 128 and 64) and no shared-memory round trips but the eight warp sums; the
 * loads and the number of blocks are v5's. Expect a small step at 2^28 and a larger one
 * at 2^24, where per-block costs weigh more; the big step is still v6's (fewer blocks).
 * __reduce_add_sync exists for 32-bit integers only (REDUX.SUM, sm_80 and later): it
 * would pass the integer check and cannot take a float. cg::reduce with a float and
 * cg::plus compiles to five shuffles and adds (SHFL.BFLY in the SASS), as reduce_warp_sum
 * does by hand, and gives the result to every lane, not only to lane 0. */
#ifndef CH03_EX3_CG_REDUCE_CUH
#define CH03_EX3_CG_REDUCE_CUH

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include "../kernels.cuh"

/* The block's sum with cooperative groups: every thread calls it, every thread of warp 0
 * gets the total. */
static __device__ __forceinline__ float ex3_block_sum(float v)
{
    namespace cg = cooperative_groups;
    __shared__ float warp_sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0f;
        v = cg::reduce(warp, v, cg::plus<float>());
    }
    return v;
}

/* v5's load (two elements a block apart), then the block's sum in shuffles. */
__global__ void ex3_cg_reduce(const float *in, int n, float *partials)
{
    size_t i = (size_t)blockIdx.x * (2 * blockDim.x) + threadIdx.x;
    float v = i < (size_t)n ? in[i] : 0.0f;
    if (i + blockDim.x < (size_t)n) v += in[i + blockDim.x];
    v = ex3_block_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

static inline void ex3_launch_cg_reduce(const float *in, int n, float *out,
                                        const ReduceWorkspace *ws)
{
    reduce_multi_pass(ex3_cg_reduce, 2 * REDUCE_BLOCK, in, n, out, ws);
}

#endif
