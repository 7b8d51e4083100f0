/* Exercise 3 (practice): four scalar elements per thread and iteration, all loads first.
 *
 * Asked: write a grid-stride version that keeps 4-byte loads but issues the loads of four
 * elements (i, i + stride, i + 2 stride, i + 3 stride) before it adds and stores any of
 * them. Predict: is `float4` fast because its instructions are wider, or because each
 * thread has more bytes in flight?
 *
 * Answer: a thread here has 8 loads of 4 bytes outstanding, 32 bytes, exactly what a
 * `float4` thread has with its 2 loads of 16 bytes. Little's law counts bytes in flight,
 * not instructions, so expect `float4`'s bandwidth, not `grid_stride`'s: the four times as
 * many load instructions cost nothing in a kernel that waits on memory. For each k a warp
 * still reads 32 neighbouring floats, so every load stays coalesced. The SASS shows the
 * eight LDG before the first STG (cuobjdump -sass vector_add). */
#ifndef CH01_EX3_UNROLL4_CUH
#define CH01_EX3_UNROLL4_CUH

#include "../kernels.cuh"

__global__ void ex3_unroll4(const float *a, const float *b, float *c, int n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += 4 * stride) {
        float x[4], y[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            size_t j = i + k * stride;
            x[k] = j < (size_t)n ? a[j] : 0.0f;
            y[k] = j < (size_t)n ? b[j] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            size_t j = i + k * stride;
            if (j < (size_t)n) c[j] = x[k] + y[k];
        }
    }
}

static inline void launch_ex3_unroll4(const float *a, const float *b, float *c, int n)
{
    ex3_unroll4<<<vadd_grid(((long long)n + 3) / 4), VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
