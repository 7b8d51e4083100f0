/* Exercise 4 (practice): the matrix add as one long vector.
 *
 * Asked: a dense row-major matrix is nx * ny floats one after another, and an add does not
 * care which element is in which row. Write the add as chapter 01's `naive` kernel over
 * n = nx * ny elements (1D grid, one thread per element, a 64-bit index) and predict its
 * bandwidth against `add_2d_32x8` and `add_2d_128x2` before running it.
 *
 * Answer: a warp reads 32 neighbouring floats, 4 sectors a request, like the best 2D
 * mappings, and no thread is idle at a ragged row end (the 2D grids have some when nx is
 * not a multiple of the block's width). Expect the 256-thread 2D mappings' bandwidth, and
 * chapter 01's `naive` at the same bytes: the 2D index buys nothing for elementwise work on
 * a dense matrix. It is worth writing a 2D index only when the kernel needs to know (x, y),
 * as the transpose does. The largest matrix, 65535 x 65535, is 4.3 billion elements: the
 * index is size_t, and the grid (16.8 million blocks) stays under gridDim.x's 2^31 - 1. */
#ifndef CH02_EX4_ADD_FLAT_CUH
#define CH02_EX4_ADD_FLAT_CUH

#include "../kernels.cuh"

__global__ void ex4_add_flat(const float *a, const float *b, float *c, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static inline void launch_ex4_add_flat(const float *a, const float *b, float *c, int nx, int ny)
{
    size_t n = (size_t)nx * (size_t)ny;
    ex4_add_flat<<<(unsigned)((n + 255) / 256), 256>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
