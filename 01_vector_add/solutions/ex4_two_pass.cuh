/* Exercise 4 (practice): the same sum in two passes, c = a, then c = c + b.
 *
 * Asked: compute c in two steps, a device-to-device copy of a into c and then the `float4`
 * kernel adding b into c in place, and predict the time before running it. This is what a
 * program does when it chains two library calls where one fused kernel would do.
 *
 * Answer: the copy moves 8 bytes per element (read a, write c) and the add 12 (read c and
 * b, write c): 20 bytes where the fused kernel moves 12. Both passes run near the copy
 * bandwidth, so expect about 20 / 12 = 1.67 times `float4`'s time; the bench, which counts
 * 12 bytes per element, then shows about 60% of `float4`'s GB/s. Fusing elementwise steps
 * into one kernel is the cheapest speedup a memory-bound program has. Reading c while
 * writing it is safe: each element is read and written by the same thread. */
#ifndef CH01_EX4_TWO_PASS_CUH
#define CH01_EX4_TWO_PASS_CUH

#include "../kernels.cuh"

static inline void launch_ex4_two_pass(const float *a, const float *b, float *c, int n)
{
    CUDA_CHECK(cudaMemcpyAsync(c, a, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0));
    launch_float4(c, b, c, n);
}

#endif
