/* Exercise 1 (warm-up): the 2D add with blocks of 256 x 1 threads.
 *
 * Asked: `add_2d_grid_1d_block` (blocks of 128 x 1) stops well below `add_2d_128x2` (blocks
 * of 128 x 2). Is it the block's shape or its size? Add the shape 256 x 1, predict where it
 * lands, and bench it next to the two.
 *
 * Answer: 256 x 1 has the 1D block's shape (one block row per matrix row, warps along the
 * row) and 128 x 2's size (256 threads, half as many blocks to start and retire). Warps of
 * all three read 32 neighbouring floats of one row, 4 sectors a request, so their bytes are
 * the same; what differs is how the work is packaged. If 256 x 1 lands with 128 x 2 and
 * 32 x 8, the size was what mattered. Bench:
 *   thread_indexing --bench --kernel add_2d_grid_1d_block,add_2d_128x2,ex1_add_2d_256x1
 * The grid has one block row per matrix row, so ny <= 65535, as for the 1D block. */
#ifndef CH02_EX1_ADD_2D_256X1_CUH
#define CH02_EX1_ADD_2D_256X1_CUH

#include "../kernels.cuh"

static inline void launch_ex1_add_2d_256x1(const float *a, const float *b, float *c, int nx, int ny)
{
    launch_add_2d<256, 1>(a, b, c, nx, ny);
}

#endif
