/* Exercise 2 (warm-up): the grid-stride kernel with one block of 256 threads per SM.
 *
 * Asked: launch `grid_stride` with as many blocks as the GPU has SMs instead of as many as
 * it can hold, and predict the bandwidth before running it.
 *
 * Answer: the loop still covers every element (that is what a grid-stride loop is for), but
 * each SM now runs 256 threads where it could run 2048: an eighth of the loads in flight,
 * 132 x 256 x 8 bytes = 270 KB. At about a microsecond that carries about 0.27 TB/s of
 * reads, about 0.4 TB/s counting the writes: roughly an eighth of `grid_stride`. The lesson:
 * a correct grid-stride loop says nothing about its speed; the grid must fill the GPU. */
#ifndef CH01_EX2_ONE_BLOCK_PER_SM_CUH
#define CH01_EX2_ONE_BLOCK_PER_SM_CUH

#include "../kernels.cuh"

static inline void launch_ex2_one_block_per_sm(const float *a, const float *b, float *c, int n)
{
    static int sms = 0;
    if (sms == 0) sms = current_device_attribute(cudaDevAttrMultiProcessorCount);
    long long needed = ((long long)n + VADD_BLOCK - 1) / VADD_BLOCK;
    int blocks = needed < sms ? (int)needed : sms;
    vector_add_grid_stride<<<blocks, VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
