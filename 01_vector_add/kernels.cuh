/* Chapter 01: c[i] = a[i] + b[i], three ways.
 *
 *   naive        one thread per element, a 1D grid as large as the array
 *   grid_stride  a fixed grid that walks the array in strides of the whole grid
 *   float4       the grid-stride loop with 16-byte loads and stores, the tail done by scalars
 *
 * Every version has the same host launcher signature, so main.cu can hold them in one
 * table. Indices are 64-bit where a grid-stride loop can step past 2^31. */
#ifndef CH01_KERNELS_CUH
#define CH01_KERNELS_CUH

#include "common/cuda_utils.cuh"

#define VADD_BLOCK 256

typedef void (*VectorAddLauncher)(const float *a, const float *b, float *c, int n);

/* naive: the first kernel everyone writes. One thread per element; the grid has
 * ceil(n / 256) blocks, so the last block's extra threads must skip the work. Coalesced
 * already: thread i of a warp touches element i, so a warp reads 128 contiguous bytes. */
__global__ void vector_add_naive(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static inline void launch_naive(const float *a, const float *b, float *c, int n)
{
    int blocks = (int)(((long long)n + VADD_BLOCK - 1) / VADD_BLOCK); /* n + 255 may pass 2^31 */
    vector_add_naive<<<blocks, VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

/* grid_stride: launch only as many blocks as the GPU holds at once and let each thread
 * loop. The block scheduler no longer retires and starts millions of blocks, and any n
 * works with one launch configuration. Same bytes as naive, so expect a small gain. */
__global__ void vector_add_grid_stride(const float *a, const float *b, float *c, int n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride)
        c[i] = a[i] + b[i];
}

/* Grid size of the grid-stride versions: one full wave, or fewer blocks if n is small. */
static inline int vadd_grid(long long items)
{
    static int resident = 0;
    if (resident == 0) resident = resident_blocks(VADD_BLOCK);
    long long needed = (items + VADD_BLOCK - 1) / VADD_BLOCK;
    return needed < 1 ? 1 : (needed < resident ? (int)needed : resident);
}

static inline void launch_grid_stride(const float *a, const float *b, float *c, int n)
{
    vector_add_grid_stride<<<vadd_grid(n), VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

/* float4: each thread moves 16 bytes per load instead of 4, so a quarter of the load and
 * store instructions carry the same bytes and more bytes are in flight per thread. cudaMalloc
 * aligns to 256 bytes, so a, b and c start on a 16-byte boundary; the last n % 4 elements
 * do not fill a float4 and are added one by one by the first threads of the grid. */
__global__ void vector_add_float4(const float *a, const float *b, float *c, int n)
{
    size_t n4 = (size_t)n / 4;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
    float4 *c4 = (float4 *)c;
    for (size_t i = first; i < n4; i += stride) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    size_t tail = 4 * n4 + first;
    if (tail < (size_t)n) c[tail] = a[tail] + b[tail];
}

static inline void launch_float4(const float *a, const float *b, float *c, int n)
{
    /* n < 4: one block, the tail */
    vector_add_float4<<<vadd_grid(n / 4), VADD_BLOCK>>>(a, b, c, n);
    CHECK_LAUNCH();
}

#endif
