/* Exercise 2 (warm-up): the padded 32 x 32 tile moved by 32 x 16 threads, 2 elements each.
 *
 * Asked: between `transpose_smem_padded` (32 x 32 threads, one element each) and
 * `transpose_smem_32x8` (32 x 8 threads, four each) lies 32 x 16. Predict its bandwidth
 * before running it: closer to which of the two?
 *
 * Answer: a thread issues 2 loads before the barrier (8 bytes in flight against 4 and 16),
 * and an SM holds 4 blocks of 512 threads, so a block waiting at its barrier leaves 3
 * others to keep memory busy. Both the bytes in flight and the number of independent
 * blocks lie between the two versions, so expect it between them; since the padded
 * version is far from the copy and 32 x 8 near it, the step from 1 to 2 elements a
 * thread should recover a large part of the gap. The same template as the chapter's
 * transposes: only ROWS changes. */
#ifndef CH02_EX2_TRANSPOSE_32X16_CUH
#define CH02_EX2_TRANSPOSE_32X16_CUH

#include "../kernels.cuh"

static inline void launch_ex2_transpose_32x16(const float *in, float *out, int nx, int ny)
{
    launch_transpose_smem<32, 1, 16>(in, out, nx, ny);
}

#endif
