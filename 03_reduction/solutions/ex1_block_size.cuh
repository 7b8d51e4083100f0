/* Exercise 1 (warm-up): v5 with 128 and with 512 threads per block.
 *
 * Asked: change v5's block size from 256 to 128 and to 512 (one constant), predict which
 * is faster at 2^28 and at 2^24, and say why v5 cannot run with fewer than 64 threads.
 *
 * Answer. A block of B threads covers 2B elements (the first add while loading), so 512
 * threads mean half as many blocks and partials as 256, and one more tree level; 128
 * threads twice as many blocks and one level fewer. Every SM still holds at most 2048
 * threads, so the loads in flight per SM are the same (two per thread); what changes is
 * the fixed cost per element: each block pays a barrier per level, a partial sum and its
 * share of the later passes. Prediction: 512 a little faster than 256, 128 a little
 * slower, the gap largest at 2^24 where the fixed costs weigh most. v5 needs 64 threads
 * because its last warp starts from sdata[tid] + sdata[tid + 32] for tid < 32: with 32
 * threads sdata has 32 entries and tid + 32 reads past its end (the static_assert says
 * so before it can happen). */
#ifndef CH03_EX1_BLOCK_SIZE_CUH
#define CH03_EX1_BLOCK_SIZE_CUH

#include "../kernels.cuh"

/* v5 with BLOCK threads: each thread adds two elements a block apart, the tree halves
 * the block's values down to 64, and one warp finishes with shuffles. */
template <int BLOCK> __global__ void ex1_v5_block(const float *in, int n, float *partials)
{
    static_assert(BLOCK >= 64 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
                  "a power of two from 64 to 1024");
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * BLOCK) + tid;
    float v = i < (size_t)n ? in[i] : 0.0f;
    if (i + BLOCK < (size_t)n) v += in[i + BLOCK];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        v = reduce_warp_sum(sdata[tid] + sdata[tid + 32]);
        if (tid == 0) partials[blockIdx.x] = v;
    }
}

/* reduce_multi_pass with BLOCK threads per block instead of REDUCE_BLOCK: passes over
 * the previous pass's partials until one block is enough. Each pass makes at most
 * ceil(n / 256) partials (BLOCK >= 128 here), which the workspace holds. */
template <int BLOCK>
static inline void ex1_launch_block(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    static_assert(2 * BLOCK >= REDUCE_BLOCK, "the workspace holds ceil(n / 256) partials");
    float *buf[2] = {ws->partials, ws->partials2};
    int which = 0;
    reduce_require_capacity(ws, n);
    for (;;) {
        int blocks = (int)(((long long)n + 2 * BLOCK - 1) / (2 * BLOCK));
        float *dst = blocks == 1 ? out : buf[which];
        ex1_v5_block<BLOCK><<<blocks, BLOCK>>>(in, n, dst);
        CHECK_LAUNCH();
        if (blocks == 1) return;
        in = dst;
        n = blocks;
        which ^= 1;
    }
}

#endif
