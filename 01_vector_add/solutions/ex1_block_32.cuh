/* Exercise 1 (warm-up): the naive kernel launched with blocks of 32 threads instead of 256.
 *
 * Asked: change the block size of `naive` to 32 and predict its bandwidth from Little's law
 * before running it.
 *
 * Answer: an SM of compute capability 9.0 holds at most 32 blocks at once, so blocks of 32
 * threads fill only 32 x 32 = 1024 of its 2048 thread slots. Each thread has two 4-byte
 * loads outstanding, so the GPU has half the bytes in flight that `naive` has:
 * 132 SMs x 1024 threads x 8 bytes = 1.08 MB. At about a microsecond of latency under load
 * that carries about 1.1 TB/s of reads, about 1.6 TB/s counting the writes (the bench counts
 * both), on the H100 and the H200 alike: the bound depends on the latency, not on the peak.
 * Expect it well below `naive` on both GPUs. Starting eight times as many blocks adds to the
 * loss in the same direction. */
#ifndef CH01_EX1_BLOCK_32_CUH
#define CH01_EX1_BLOCK_32_CUH

#include "../kernels.cuh"

static inline void launch_ex1_block_32(const float *a, const float *b, float *c, int n)
{
    int blocks = (int)(((long long)n + 31) / 32);
    vector_add_naive<<<blocks, 32>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
