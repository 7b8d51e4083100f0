/* Exercise 5 (stretch): the single pass with a grid-wide barrier (a cooperative launch).
 *
 * Asked: blocks cannot safely wait for each other in an ordinary launch (a block that
 * waits may hold the SM that a block it waits for needs). A cooperative launch
 * (cudaLaunchCooperativeKernel) promises that every block of the grid is resident at
 * once, and then cooperative groups' grid.sync() is a barrier for the whole grid. Write
 * v7 with grid.sync() in place of the ticket counter: every block stores its partial,
 * the grid synchronizes, block 0 adds the partials. Predict: faster or slower than v7?
 *
 * Answer. The grid is already one wave (reduce_grid_stride_blocks never asks for more
 * blocks than fit), so the cooperative launch accepts it. Both versions end when the
 * slowest block has stored its partial and one block has added them all. In v7 that one
 * is the last block to arrive, which goes on at once; here it is block 0, which first has
 * to see the barrier open: the barrier is one atomic add per block on one word, which
 * every block polls (cooperative_groups/details/sync.h), so block 0 starts adding one L2
 * round trip or so after the last arrival. Expect v7's time within the noise at 2^28 and
 * at most a little more at 2^24, where the end of the kernel is a larger share. The
 * result is deterministic, as in v7: block 0 adds the partials in a fixed order. */
#ifndef CH03_EX5_GRID_SYNC_CUH
#define CH03_EX5_GRID_SYNC_CUH

#include <cooperative_groups.h>

#include "../kernels.cuh"

__global__ void ex5_grid_sync(const float *in, int n, float *out, float *partials)
{
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    float total = reduce_block_sum(reduce_thread_sum_float4(in, n));
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
    /* every block's partial is stored and visible to every block after this */
    grid.sync();
    if (blockIdx.x != 0) return;
    float v = 0.0f;
    for (unsigned int i = threadIdx.x; i < gridDim.x; i += blockDim.x) v += __ldcg(&partials[i]);
    v = reduce_block_sum(v);
    if (threadIdx.x == 0) *out = v;
}

static inline void ex5_launch_grid_sync(const float *in, int n, float *out,
                                        const ReduceWorkspace *ws)
{
    static int resident = 0;
    if (resident == 0) {
        if (!current_device_attribute(cudaDevAttrCooperativeLaunch)) {
            fprintf(stderr, "ex5_grid_sync: this GPU does not support cooperative launches\n");
            exit(1);
        }
        resident = reduce_resident_blocks((const void *)ex5_grid_sync, REDUCE_BLOCK);
    }
    reduce_require_capacity(ws, n);
    float *partials = ws->partials;
    void *args[] = {(void *)&in, (void *)&n, (void *)&out, (void *)&partials};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)ex5_grid_sync,
                                           reduce_grid_stride_blocks(resident, n), REDUCE_BLOCK,
                                           args, 0, 0));
    CHECK_LAUNCH();
}

#endif
