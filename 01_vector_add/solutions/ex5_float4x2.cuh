/* Exercise 5 (stretch): two float4 of each input per thread and iteration.
 *
 * Asked: make each iteration of the `float4` loop load two float4 of a and of b (chunks i
 * and i + stride) before it adds, and predict whether it moves past `float4`.
 *
 * Answer: no measurable gain is expected. A `float4` thread already has 32 bytes of loads in
 * flight, 132 x 2048 x 32 bytes = 8.65 MB on the whole GPU, three to four times what Little's
 * law asks at about a microsecond (the read share of the copy bandwidth times the latency:
 * about 2 MB on the H100, about 2.8 MB on the H200). Once latency is covered, more bytes
 * in flight only queue longer; what remains between `float4` and the copy is not latency.
 * The tail (the last n % 4 elements) is done as in `float4`, by the first threads. */
#ifndef CH01_EX5_FLOAT4X2_CUH
#define CH01_EX5_FLOAT4X2_CUH

#include "../kernels.cuh"

__global__ void ex5_float4x2(const float *a, const float *b, float *c, int n)
{
    size_t n4 = (size_t)n / 4;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
    float4 *c4 = (float4 *)c;
    for (size_t i = first; i < n4; i += 2 * stride) {
        size_t j = i + stride;
        float4 x0 = a4[i], y0 = b4[i], x1, y1;
        if (j < n4) {
            x1 = a4[j];
            y1 = b4[j];
        }
        c4[i] = make_float4(x0.x + y0.x, x0.y + y0.y, x0.z + y0.z, x0.w + y0.w);
        if (j < n4) c4[j] = make_float4(x1.x + y1.x, x1.y + y1.y, x1.z + y1.z, x1.w + y1.w);
    }
    size_t tail = 4 * n4 + first;
    if (tail < (size_t)n) c[tail] = a[tail] + b[tail];
}

static inline void launch_ex5_float4x2(const float *a, const float *b, float *c, int n)
{
    /* n < 8: one block, which also does the tail */
    ex5_float4x2<<<vadd_grid(n / 8), VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
