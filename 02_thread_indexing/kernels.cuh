/* Chapter 02: how threads are mapped onto a matrix, shown on C = A + B and on out = A^T.
 *
 * Matrix add (every element independent, so only the mapping changes the speed):
 *   add_1d_columns       1D grid of 1D blocks; thread x walks down column x
 *   add_2d_grid_1d_block 2D grid of 1D blocks (128 threads along a row, one block row per y)
 *   add_2d_BXxBY         2D grid of 2D blocks, several block shapes
 *   add_2d_swapped_32x8  the 32x8 kernel with x and y swapped: a warp reads down a column
 *   add_float4           2D grid, each thread one aligned float4 of a row, head/tail by scalars
 * Transpose (in: nx columns x ny rows; out: ny columns x nx rows):
 *   transpose_naive         coalesced reads, writes strided by ny floats
 *   transpose_smem          32x32 tile in shared memory: both sides coalesced, bank conflicts
 *   transpose_smem_padded   tile[32][33]: the same, conflict-free
 *   transpose_smem_32x8     32x8 threads move a 32x32 tile, 4 elements each
 *   transpose_tile64        32x8 threads move a 64x64 tile (tile[64][65]), 16 elements each
 *
 * Row-major everywhere: element (x, y) of an nx-column matrix is at y * nx + x; offsets are
 * size_t because nx * ny may exceed 2^31. Every version of a family has the same launcher
 * signature, so main.cu keeps them in one table. */
#ifndef CH02_KERNELS_CUH
#define CH02_KERNELS_CUH

#include "common/cuda_utils.cuh"
#include "reference.h"

typedef void (*MatrixAddLauncher)(const float *a, const float *b, float *c, int nx, int ny);
typedef void (*TransposeLauncher)(const float *in, float *out, int nx, int ny);

static inline unsigned ch02_ceil_div(long long n, int d) { return (unsigned)((n + d - 1) / d); }

/* ---------------------------------------------------------------- matrix add */

#define CH02_COLUMN_BLOCK 128

/* add_1d_columns: chapter 01's 1D grid, one thread per column, each walking all ny rows.
 * A warp still reads 32 neighbouring floats of one row per step (coalesced), but the grid
 * has only nx threads: 8192 columns make 64 blocks, too few to fill 132 SMs or to keep
 * enough loads in flight, and each thread waits on ny loads one after another. */
__global__ void add_1d_columns(const float *a, const float *b, float *c, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= nx) return;
    for (int y = 0; y < ny; y++) {
        size_t i = (size_t)y * nx + x;
        c[i] = a[i] + b[i];
    }
}

static inline void launch_add_1d_columns(const float *a, const float *b, float *c, int nx, int ny)
{
    add_1d_columns<<<ch02_ceil_div(nx, CH02_COLUMN_BLOCK), CH02_COLUMN_BLOCK>>>(a, b, c, nx, ny);
    CHECK_LAUNCH();
}

/* add_2d_grid_1d_block: one thread per element. blockIdx.y picks the row, a 1D block of
 * 128 threads a stretch of it: nx * ny threads instead of nx, so the whole GPU is busy
 * and every warp reads 128 contiguous bytes. Limited to ny <= 65535 rows (gridDim.y). */
__global__ void add_2d_grid_1d_block(const float *a, const float *b, float *c, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < nx && y < ny) {
        size_t i = (size_t)y * nx + x;
        c[i] = a[i] + b[i];
    }
}

static inline void launch_add_2d_grid_1d_block(const float *a, const float *b, float *c, int nx,
                                               int ny)
{
    dim3 grid(ch02_ceil_div(nx, CH02_COLUMN_BLOCK), (unsigned)ny);
    add_2d_grid_1d_block<<<grid, CH02_COLUMN_BLOCK>>>(a, b, c, nx, ny);
    CHECK_LAUNCH();
}

/* add_2d: the textbook mapping, a 2D grid of BX x BY blocks, x = column, y = row.
 * threadIdx.x is the fast index inside a warp, so with BX >= 32 a warp covers 32
 * neighbouring floats of one row; with BX = 16 or 8 it covers 2 or 4 row pieces of 64 or
 * 32 bytes, still whole 32-byte sectors. The shape changes how many rows a block spans
 * and how ragged the matrix edges are, little else. */
template <int BX, int BY>
__global__ void add_2d(const float *a, const float *b, float *c, int nx, int ny)
{
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x < nx && y < ny) {
        size_t i = (size_t)y * nx + x;
        c[i] = a[i] + b[i];
    }
}

template <int BX, int BY>
static inline void launch_add_2d(const float *a, const float *b, float *c, int nx, int ny)
{
    dim3 block(BX, BY), grid(ch02_ceil_div(nx, BX), ch02_ceil_div(ny, BY));
    add_2d<BX, BY><<<grid, block>>>(a, b, c, nx, ny);
    CHECK_LAUNCH();
}

/* add_2d_swapped: the same kernel with x and y exchanged, y = the fast index. The 32
 * threads of a warp now read 32 different rows of one column: 32 sectors of 32 bytes
 * fetched for 128 useful bytes. The other 7 floats of each sector are wanted by the
 * block's other warps a moment later, so caches save part of it, but every warp now
 * issues 32 memory transactions per load instead of 4. */
template <int BX, int BY>
__global__ void add_2d_swapped(const float *a, const float *b, float *c, int nx, int ny)
{
    int y = blockIdx.x * BX + threadIdx.x;
    int x = blockIdx.y * BY + threadIdx.y;
    if (x < nx && y < ny) {
        size_t i = (size_t)y * nx + x;
        c[i] = a[i] + b[i];
    }
}

template <int BX, int BY>
static inline void launch_add_2d_swapped(const float *a, const float *b, float *c, int nx, int ny)
{
    dim3 block(BX, BY), grid(ch02_ceil_div(ny, BX), ch02_ceil_div(nx, BY));
    add_2d_swapped<BX, BY><<<grid, block>>>(a, b, c, nx, ny);
    CHECK_LAUNCH();
}

/* add_float4: the 32x8 mapping with 16 bytes per thread instead of 4. A float4 access must
 * be 16-byte aligned, and row y begins at element y * nx, which is aligned only when nx
 * is a multiple of 4; so each row is cut into chunks aligned to the whole array (see
 * reference.h): a chunk that lies entirely in the row is one float4 load per input and
 * one store, the row's head and tail chunks fall back to scalars. A quarter of the memory
 * instructions move the same bytes, and each warp has 512 bytes per load in flight. */
__global__ void add_float4(const float *a, const float *b, float *c, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y >= ny) return;
    int shift = ch02_row_shift(nx, y);
    if (j >= ch02_chunks_per_row(nx, shift)) return;
    size_t row = (size_t)y * nx;
    long long first = ch02_chunk_first(shift, j);
    if (first >= 0 && first + 4 <= nx) {
        size_t q = (row + (size_t)first) / 4;
        float4 u = ((const float4 *)a)[q], v = ((const float4 *)b)[q];
        ((float4 *)c)[q] = make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w);
        return;
    }
    for (long long col = first; col < first + 4; col++) {
        if (col < 0 || col >= nx) continue;
        size_t i = row + (size_t)col;
        c[i] = a[i] + b[i];
    }
}

static inline void launch_add_float4(const float *a, const float *b, float *c, int nx, int ny)
{
    dim3 block(32, 8), grid(ch02_ceil_div(ch02_max_chunks_per_row(nx), 32), ch02_ceil_div(ny, 8));
    add_float4<<<grid, block>>>(a, b, c, nx, ny);
    CHECK_LAUNCH();
}

/* ---------------------------------------------------------------- transpose */

#define CH02_TILE 32

/* transpose_naive: thread (x, y) copies in[y][x] to out[x][y]. Neighbouring threads read
 * neighbouring floats (coalesced) but write floats ny apart: each warp store touches 32
 * sectors to write 128 bytes, and sectors are only partly filled when they reach L2. */
__global__ void transpose_naive(const float *in, float *out, int nx, int ny)
{
    int x = blockIdx.x * CH02_TILE + threadIdx.x;
    int y = blockIdx.y * CH02_TILE + threadIdx.y;
    if (x < nx && y < ny) out[(size_t)x * ny + y] = in[(size_t)y * nx + x];
}

static inline void launch_transpose_naive(const float *in, float *out, int nx, int ny)
{
    dim3 block(CH02_TILE, CH02_TILE),
        grid(ch02_ceil_div(nx, CH02_TILE), ch02_ceil_div(ny, CH02_TILE));
    transpose_naive<<<grid, block>>>(in, out, nx, ny);
    CHECK_LAUNCH();
}

/* transpose_smem: a block of 32 x ROWS threads stages one TILE x TILE tile in shared
 * memory. Tile rows are read coalesced from `in`; after the barrier the block writes the
 * tile's columns as coalesced rows of `out`. Shared memory has 32 banks of 4 bytes, and
 * a warp reading a tile column, tile[c][r] for 32 consecutive c, touches 32 floats one
 * tile row apart. With PAD = 0 and TILE = 32 a row is 32 floats, so all 32 fall in the
 * same bank and the read is replayed 32 times (a 32-way bank conflict); PAD = 1 makes the
 * row stride 33 (or 65) floats, which spreads a column over all 32 banks.
 *
 * The instances, in the order of the lesson:
 *   <32, 0, 32>  transpose_smem         1024 threads, one element each, bank conflicts
 *   <32, 1, 32>  transpose_smem_padded  the same without conflicts
 *   <32, 1, 8>   transpose_smem_32x8    256 threads, 4 elements each: a thread issues its
 *                                       4 loads back to back, 4x the bytes in flight, and
 *                                       8 small blocks per SM instead of 2 big ones
 *   <64, 1, 8>   transpose_tile64       the 32x8 block moves a 64x64 tile, 16 elements per
 *                                       thread: 16 loads in flight per thread and a
 *                                       quarter of the barriers per byte */
template <int TILE, int PAD, int ROWS>
__global__ void transpose_smem(const float *in, float *out, int nx, int ny)
{
    __shared__ float tile[TILE][TILE + PAD];
    int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
#pragma unroll
    for (int k = 0; k < TILE / ROWS; k++)
#pragma unroll
        for (int h = 0; h < TILE / 32; h++) {
            int r = threadIdx.y + k * ROWS, c = threadIdx.x + 32 * h;
            int x = bx + c, y = by + r;
            if (x < nx && y < ny) tile[r][c] = in[(size_t)y * nx + x];
        }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / ROWS; k++)
#pragma unroll
        for (int h = 0; h < TILE / 32; h++) {
            int r = threadIdx.y + k * ROWS, c = threadIdx.x + 32 * h;
            int ox = by + c, oy = bx + r; /* out column = in row, out row = in column */
            if (ox < ny && oy < nx) out[(size_t)oy * ny + ox] = tile[c][r];
        }
}

template <int TILE, int PAD, int ROWS>
static inline void launch_transpose_smem(const float *in, float *out, int nx, int ny)
{
    dim3 block(32, ROWS), grid(ch02_ceil_div(nx, TILE), ch02_ceil_div(ny, TILE));
    transpose_smem<TILE, PAD, ROWS><<<grid, block>>>(in, out, nx, ny);
    CHECK_LAUNCH();
}

#endif
