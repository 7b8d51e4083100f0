/* Exercise 5 (practice): a transpose that reads its tile with float4 loads.
 *
 * Asked: write a 32 x 32 tile transpose for 32 x 8 threads whose global reads are float4
 * (each thread one 4-float piece of a tile row, the 256 threads the whole tile in one go)
 * and whose writes stay as in `transpose_smem_32x8`. When is a float4 read legal at an
 * arbitrary nx (think of `add_float4`)? Predict its bandwidth against
 * `transpose_smem_32x8` before running it; check with -n 8x8,12x4,7x13,4096x4100.
 *
 * Answer: the piece of row y that starts at column x is 16-byte aligned only when
 * y * nx + x is a multiple of 4; x is (a multiple of 32 plus a multiple of 4), so that
 * holds exactly for the rows where y * nx is, every row when nx % 4 == 0. Other rows, and
 * a piece that runs past the row's end, are read with scalars. Each thread then has one
 * 16-byte load in flight before the barrier, the same 16 bytes as the four 4-byte loads of
 * `transpose_smem_32x8`: expect the same bandwidth. A quarter of the load instructions does
 * not matter to a kernel that waits on memory (chapter 01's float4 lesson, seen from the
 * other side: there, float4 won because it put more bytes in flight).
 *
 * The tile's rows stay 33 floats (a float4 store into shared memory would need 16-byte
 * aligned rows), so the four values go in as scalars; word 33 r + c + k of a warp's 4 rows
 * and 8 pieces falls in 32 different banks. */
#ifndef CH02_EX5_TRANSPOSE_FLOAT4_READ_CUH
#define CH02_EX5_TRANSPOSE_FLOAT4_READ_CUH

#include "../kernels.cuh"

__global__ void ex5_transpose_float4_read(const float *in, float *out, int nx, int ny)
{
    __shared__ float tile[32][33];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    int t = threadIdx.y * 32 + threadIdx.x;
    /* thread t reads tile row t / 8, columns 4 (t % 8) .. 4 (t % 8) + 3 */
    int r = t / 8, c = 4 * (t % 8);
    int x = bx + c, y = by + r;
    if (y < ny) {
        size_t i = (size_t)y * nx + x;
        if (i % 4 == 0 && x + 4 <= nx) {
            float4 v = *(const float4 *)(in + i);
            tile[r][c] = v.x;
            tile[r][c + 1] = v.y;
            tile[r][c + 2] = v.z;
            tile[r][c + 3] = v.w;
        } else {
            for (int k = 0; k < 4; k++)
                if (x + k < nx) tile[r][c + k] = in[i + k];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int tr = threadIdx.y + 8 * k, tc = threadIdx.x;
        int ox = by + tc, oy = bx + tr; /* out column = in row, out row = in column */
        if (ox < ny && oy < nx) out[(size_t)oy * ny + ox] = tile[tc][tr];
    }
}

static inline void launch_ex5_transpose_float4_read(const float *in, float *out, int nx, int ny)
{
    dim3 block(32, 8), grid(ch02_ceil_div(nx, 32), ch02_ceil_div(ny, 32));
    ex5_transpose_float4_read<<<grid, block>>>(in, out, nx, ny);
    CHECK_LAUNCH();
}

#endif
