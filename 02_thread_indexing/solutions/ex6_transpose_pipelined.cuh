/* Exercise 6 (stretch): a transpose that loads the next tile while it writes this one.
 *
 * Asked: the lesson's guess for the transpose's last few percent is the barrier: a block
 * alternates between a phase that only reads and a phase that only writes, and while it
 * waits at __syncthreads it has nothing in flight. Test the guess: let each block of 32 x 8
 * threads walk a strip of EX6_STRIP tiles down the matrix, and issue the loads of tile t + 1
 * into registers before writing tile t out of shared memory, so that loads are in flight
 * during the writes. Predict: against `transpose_smem_32x8` (the same tile and block, one
 * tile a block) and `transpose_tile64`, does it gain, and by how much at most?
 *
 * Answer: at most the gap to the copy, a few percent, and only if the guess is right. Each
 * thread keeps its 16 bytes of loads in flight across the write phase instead of starting
 * them after it, and four tiles a block also means a quarter as many blocks to start.
 * Against it: 8 blocks an SM already overlap one block's writes with another's reads, so
 * the SM as a whole is rarely without loads in flight. If it runs no faster than
 * `transpose_smem_32x8`, the barrier was not what stood in the way. The measurement
 * decides; the chapter leaves the question open.
 *
 * Correctness: the loads into registers are guarded (a zero outside the matrix), every
 * tile entry is written before the barrier that precedes its reads, and the barrier at
 * the top of the loop keeps a fast warp from overwriting the tile while slower warps still
 * read the previous one. */
#ifndef CH02_EX6_TRANSPOSE_PIPELINED_CUH
#define CH02_EX6_TRANSPOSE_PIPELINED_CUH

#include "../kernels.cuh"

#define EX6_STRIP 4

/* The 4 elements thread (threadIdx.x, threadIdx.y) moves of the tile at (bx, by). */
__device__ __forceinline__ void ex6_load(const float *in, float v[4], int nx, int ny, int bx,
                                         int by)
{
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int x = bx + threadIdx.x, y = by + threadIdx.y + 8 * k;
        v[k] = x < nx && y < ny ? in[(size_t)y * nx + x] : 0.0f;
    }
}

__global__ void ex6_transpose_pipelined(const float *in, float *out, int nx, int ny)
{
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32;
    int first = blockIdx.y * EX6_STRIP, tiles = (ny + 31) / 32;
    int last = first + EX6_STRIP < tiles ? first + EX6_STRIP : tiles;
    float v[4];
    ex6_load(in, v, nx, ny, bx, first * 32);
    for (int t = first; t < last; t++) {
        int by = t * 32;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 4; k++) tile[threadIdx.y + 8 * k][threadIdx.x] = v[k];
        __syncthreads();
        /* the next tile's loads go out before this tile's stores */
        if (t + 1 < last) ex6_load(in, v, nx, ny, bx, by + 32);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int r = threadIdx.y + 8 * k, c = threadIdx.x;
            int ox = by + c, oy = bx + r;
            if (ox < ny && oy < nx) out[(size_t)oy * ny + ox] = tile[c][r];
        }
    }
}

static inline void launch_ex6_transpose_pipelined(const float *in, float *out, int nx, int ny)
{
    dim3 block(32, 8), grid(ch02_ceil_div(nx, 32), ch02_ceil_div(ch02_ceil_div(ny, 32), EX6_STRIP));
    ex6_transpose_pipelined<<<grid, block>>>(in, out, nx, ny);
    CHECK_LAUNCH();
}

#endif
