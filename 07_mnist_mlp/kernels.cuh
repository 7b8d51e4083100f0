/* Chapter 07: the kernels of an MLP training step that no earlier chapter teaches.
 *
 * The matrix products come from chapter 05 (sgemm_naive, sgemm_best), the transposes of
 * the unfused trainers from chapter 02, the warp-level sums from chapter 03 and the
 * grid-stride float4 pattern (with its grid size, vadd_grid) from chapter 01. What is
 * here is what an MLP needs besides those:
 *
 *   unfused, one job per kernel (the naive trainer and its first steps):
 *     mlp_gather            batch rows of the resident data set, normalized (+ transposed copy)
 *     mlp_add_bias_naive    z += b, one thread per element
 *     mlp_relu_naive        a = max(z, 0)
 *     mlp_softmax_naive     one thread per row
 *     mlp_xent_naive        per-row loss and dz2 = (p - onehot) / B
 *     mlp_colsum_naive      bias gradients: one thread per column walks the rows
 *     mlp_relu_backward_naive  dz1 = da1 * (a1 > 0)
 *     mlp_sgd_naive         v = mu v + g; w -= lr v
 *   (the loss of an unfused step is chapter 03's sum of the per-row losses: v1 in the
 *    naive and resident trainers, the single-pass v7 in best_kernels)
 *   fused (the optimized trainer):
 *     mlp_output_layer      a1 = relu(z1 + b1) on the fly, z2 = a1 W2 + b2, softmax, loss,
 *                           dz2 and db2 in one kernel
 *     mlp_hidden_backward   a1 again on the fly, dz1 = relu'(z1 + b1) * (dz2 W2^T),
 *                           dW2 += a1^T dz2, db1 += sum dz1
 *     mlp_sgd_step          w -= lr v; v *= mu over all parameters at once, float4
 *
 * The fused trainer keeps no separate gradient: the velocity v of SGD with momentum is
 * the buffer the gradient is accumulated into. Each step's update leaves v = mu v, then
 * the next step's backward pass adds its gradient on top (atomics, or the GEMM's beta = 1),
 * which is exactly v = mu v + g. Kernels of the fused step read the batch position from
 * a device counter (`cursor`) that the update kernel advances, so the same launches can
 * be captured once in a CUDA graph and replayed for every step. */
#ifndef CH07_KERNELS_CUH
#define CH07_KERNELS_CUH

#include "01_vector_add/kernels.cuh"
#include "02_thread_indexing/kernels.cuh"
#include "03_reduction/kernels.cuh"
#include "05_matmul_tiled/kernels.cuh"
#include "idx.h"
#include "reference.h"

#define MLP_TILE 32
#define MLP_GATHER_ROWS 8

static inline unsigned mlp_blocks(long long n, int per_block) { return (unsigned)((n + per_block - 1) / per_block); }

/* ------------------------------------------------------------------ the batch */

/* mlp_gather: rows order[start .. start + batch) of the resident uint8 data set, scaled
 * to (p / 255 - mean) / std, into x (batch x 784) and, if xt is not NULL, its transpose
 * xt (784 x batch) for the dW1 product. A 32 x 32 tile passes through shared memory as in
 * chapter 02's transpose, so both stores are coalesced. start = *cursor + first (cursor
 * may be NULL). With order NULL the batch is rows 0 .. batch of `pixels` (a batch copied
 * in by the host). Labels go to y. It also zeroes zero_out[0 .. zero_count) (z1 in the
 * fused step): the forward GEMM then accumulates into it with beta = 1, and chapter 05's
 * split-K needs no clearing launch of its own. */
__global__ void mlp_gather(const unsigned char *pixels, const unsigned char *labels, const int *order,
                           const int *cursor, int first, int batch, float mean, float std,
                           float *x, float *xt, int *y, float *zero_out, size_t zero_count)
{
    __shared__ float tile[MLP_TILE][MLP_TILE + 1];
    size_t thread = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y +
                    threadIdx.y * blockDim.x + threadIdx.x;
    size_t threads = (size_t)gridDim.x * gridDim.y * blockDim.x * blockDim.y;
    for (size_t i = thread; i < zero_count; i += threads) zero_out[i] = 0.0f;
    int start = order && cursor ? *cursor + first : first;
    int k0 = blockIdx.x * MLP_TILE, b0 = blockIdx.y * MLP_TILE, tx = threadIdx.x;
#pragma unroll
    for (int r = threadIdx.y; r < MLP_TILE; r += MLP_GATHER_ROWS) {
        int b = b0 + r, k = k0 + tx;
        if (b < batch && k < IDX_PIXELS) {
            int img = order ? order[start + b] : b;
            float v = ((float)pixels[(size_t)img * IDX_PIXELS + k] / 255.0f - mean) / std;
            x[(size_t)b * IDX_PIXELS + k] = v;
            tile[r][tx] = v;
        }
    }
    if (blockIdx.x == 0 && threadIdx.y == 0 && b0 + tx < batch)
        y[b0 + tx] = labels[order ? order[start + b0 + tx] : b0 + tx];
    if (!xt) return;
    __syncthreads();
#pragma unroll
    for (int r = threadIdx.y; r < MLP_TILE; r += MLP_GATHER_ROWS) {
        int k = k0 + r, b = b0 + tx;
        if (b < batch && k < IDX_PIXELS) xt[(size_t)k * batch + b] = tile[tx][r];
    }
}

static inline void launch_gather(const unsigned char *pixels, const unsigned char *labels, const int *order,
                                 const int *cursor, int first, int batch, float mean, float std, float *x,
                                 float *xt, int *y, float *zero_out, size_t zero_count)
{
    dim3 block(MLP_TILE, MLP_GATHER_ROWS), grid(mlp_blocks(IDX_PIXELS, MLP_TILE), mlp_blocks(batch, MLP_TILE));
    mlp_gather<<<grid, block>>>(pixels, labels, order, cursor, first, batch, mean, std, x, xt, y, zero_out,
                                zero_count);
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------------ unfused kernels */

#define MLP_NAIVE_BLOCK 256

__global__ void mlp_add_bias_naive(float *z, const float *b, int rows, int cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) z[i] += b[i % cols];
}

__global__ void mlp_relu_naive(const float *z, float *a, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = fmaxf(z[i], 0.0f);
}

/* One thread per row of 10 logits: subtract the maximum, exponentiate, normalize. */
__global__ void mlp_softmax_naive(const float *z, float *p, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *zr = z + (size_t)r * MLP_CLASSES;
    float m = zr[0], s = 0.0f;
    for (int c = 1; c < MLP_CLASSES; c++) m = fmaxf(m, zr[c]);
    for (int c = 0; c < MLP_CLASSES; c++) s += expf(zr[c] - m);
    for (int c = 0; c < MLP_CLASSES; c++) p[(size_t)r * MLP_CLASSES + c] = expf(zr[c] - m) / s;
}

/* loss[r] = -log p[r][y]; dz2 = (p - onehot(y)) / batch. p is clamped at FLT_MIN so a
 * probability that underflowed gives a large loss, not infinity. */
__global__ void mlp_xent_naive(const float *p, const int *y, float *loss, float *dz2, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    loss[r] = -logf(fmaxf(p[(size_t)r * MLP_CLASSES + y[r]], 1.17549435e-38f));
    for (int c = 0; c < MLP_CLASSES; c++)
        dz2[(size_t)r * MLP_CLASSES + c] = (p[(size_t)r * MLP_CLASSES + c] - (c == y[r] ? 1.0f : 0.0f)) / rows;
}

/* out[c] = sum over rows of m[r][c]: one thread per column, so a warp reads 32
 * neighbouring floats of a row per step (coalesced), but few threads for 10 columns. */
__global__ void mlp_colsum_naive(const float *m, float *out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += m[(size_t)r * cols + c];
    out[c] = s;
}

__global__ void mlp_relu_backward_naive(const float *da, const float *a, float *dz, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dz[i] = a[i] > 0.0f ? da[i] : 0.0f;
}

__global__ void mlp_sgd_naive(float *w, float *v, const float *g, long long n, float lr, float mu)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * v[i];
    }
}

/* ------------------------------------------------------------------ fused kernels */

#define MLP_OUT_THREADS 128

/* mlp_output_layer: one block of 128 threads per batch row. The bias and ReLU of the
 * hidden layer are applied on the fly as z1 is read (a1 = max(z1 + b1, 0) is never
 * stored), each thread takes hidden units k, k + 128, ... and accumulates the 10 dot
 * products with W2's rows, chapter 03's warp sum adds them within each warp, and thread 0
 * adds the four warps' sums and finishes the row: bias, softmax, -log p[y], the argmax,
 * and when training dz2 = (p - onehot) / batch. The loss, the count of correct rows and
 * the b2 gradient (the column sums of dz2) go to their totals by atomics. This one kernel
 * replaces the bias and ReLU passes, a GEMM with N = 10 (which leaves most of a 64-wide
 * tile empty), the second bias pass, softmax, the loss kernel, its sum and a column sum. */
template <bool TRAIN>
__global__ void __launch_bounds__(MLP_OUT_THREADS)
mlp_output_layer(const float *z1, const float *b1, const float *w2, const float *b2, const int *y, int hidden,
                 float inv_batch, float *dz2, float *gb2, float *loss_slots, const int *cursor, int full_batch,
                 int *correct)
{
    __shared__ float s_part[MLP_OUT_THREADS / 32][MLP_CLASSES];
    int r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float acc[MLP_CLASSES];
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) acc[c] = 0.0f;
    const float *zr = z1 + (size_t)r * hidden;
#pragma unroll 4
    for (int k = threadIdx.x; k < hidden; k += MLP_OUT_THREADS) {
        float a = fmaxf(zr[k] + b1[k], 0.0f);
        const float *wk = w2 + (size_t)k * MLP_CLASSES;
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) acc[c] = fmaf(a, wk[c], acc[c]);
    }
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) {
        acc[c] = reduce_warp_sum(acc[c]);
        if (lane == 0) s_part[warp][c] = acc[c];
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    float z[MLP_CLASSES], zmax = -INFINITY, zlabel = 0.0f, sum = 0.0f;
    int best = 0, label = y[r];
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) {
        z[c] = b2[c];
        for (int w = 0; w < MLP_OUT_THREADS / 32; w++) z[c] += s_part[w][c];
        if (z[c] > zmax) { zmax = z[c]; best = c; }
        if (c == label) zlabel = z[c]; /* not z[label]: a computed index would put z in local memory */
    }
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) sum += expf(z[c] - zmax);
    atomicAdd(loss_slots + (cursor ? *cursor / full_batch : 0), logf(sum) + zmax - zlabel);
    if (correct && best == label) atomicAdd(correct, 1);
    if (TRAIN) {
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) {
            float d = (expf(z[c] - zmax) / sum - (c == label ? 1.0f : 0.0f)) * inv_batch;
            dz2[(size_t)r * MLP_CLASSES + c] = d;
            atomicAdd(gb2 + c, d);
        }
    }
}

template <bool TRAIN>
static inline void launch_output_layer(const float *z1, const float *b1, const float *w2, const float *b2,
                                       const int *y, int rows, int hidden, float *dz2, float *gb2,
                                       float *loss_slots, const int *cursor, int full_batch, int *correct)
{
    mlp_output_layer<TRAIN><<<rows, MLP_OUT_THREADS>>>(z1, b1, w2, b2, y, hidden, 1.0f / rows, dz2, gb2,
                                                       loss_slots, cursor, full_batch, correct);
    CHECK_LAUNCH();
}

#define MLP_BACK_COLS 64
#define MLP_BACK_MAX_ROWS 32

/* mlp_hidden_backward: thread j of a block owns hidden unit j for `rows_per_block` batch
 * rows. It keeps W2's row j (10 floats) and b1[j] in registers and the block's dz2 rows
 * in shared memory; per row it recomputes a1 = max(z1 + b1, 0), forms da1 = dz2 . W2[j],
 * masks it with the ReLU (a1 > 0 exactly when z1 + b1 > 0), writes dz1, and accumulates
 * the dW2 row j (10 sums of a1 * dz2) and the b1 gradient. At the end one atomic per
 * value adds the block's share to the velocity. A GEMM with K = 10, the ReLU mask, a
 * transpose and a GEMM with N = 10 become one pass over z1. rows_per_block is chosen so
 * that about 8 blocks share each column: enough blocks for the GPU, few atomics. */
__global__ void __launch_bounds__(MLP_BACK_COLS)
mlp_hidden_backward(const float *z1, const float *b1, const float *dz2, const float *w2, int rows, int hidden,
                    int rows_per_block, float *dz1, float *gw2, float *gb1)
{
    __shared__ float s_dz2[MLP_BACK_MAX_ROWS][MLP_CLASSES];
    int r0 = blockIdx.y * rows_per_block, j = blockIdx.x * MLP_BACK_COLS + threadIdx.x;
    int nrows = rows - r0 < rows_per_block ? rows - r0 : rows_per_block;
    for (int i = threadIdx.x; i < nrows * MLP_CLASSES; i += blockDim.x)
        s_dz2[i / MLP_CLASSES][i % MLP_CLASSES] = dz2[(size_t)r0 * MLP_CLASSES + i];
    __syncthreads();
    if (j >= hidden) return;
    float w[MLP_CLASSES], gw[MLP_CLASSES], gb = 0.0f, bias = b1[j];
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) { w[c] = w2[(size_t)j * MLP_CLASSES + c]; gw[c] = 0.0f; }
    /* all of this thread's z1 loads first, back to back: one memory latency, not nrows */
    float zr[MLP_BACK_MAX_ROWS];
#pragma unroll
    for (int r = 0; r < MLP_BACK_MAX_ROWS; r++)
        if (r < nrows) zr[r] = z1[(size_t)(r0 + r) * hidden + j];
#pragma unroll
    for (int r = 0; r < MLP_BACK_MAX_ROWS; r++) {
        if (r >= nrows) break;
        float a = fmaxf(zr[r] + bias, 0.0f), da = 0.0f;
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) {
            da = fmaf(s_dz2[r][c], w[c], da);
            gw[c] = fmaf(a, s_dz2[r][c], gw[c]);
        }
        float d = a > 0.0f ? da : 0.0f;
        dz1[(size_t)(r0 + r) * hidden + j] = d;
        gb += d;
    }
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) atomicAdd(gw2 + (size_t)j * MLP_CLASSES + c, gw[c]);
    atomicAdd(gb1 + j, gb);
}

static inline void launch_hidden_backward(const float *z1, const float *b1, const float *dz2, const float *w2,
                                          int rows, int hidden, float *dz1, float *gw2, float *gb1)
{
    int per_block = (rows + 7) / 8;
    per_block = per_block > MLP_BACK_MAX_ROWS ? MLP_BACK_MAX_ROWS : per_block;
    dim3 grid(mlp_blocks(hidden, MLP_BACK_COLS), mlp_blocks(rows, per_block));
    mlp_hidden_backward<<<grid, MLP_BACK_COLS>>>(z1, b1, dz2, w2, rows, hidden, per_block, dz1, gw2, gb1);
    CHECK_LAUNCH();
}

/* mlp_sgd_step: every parameter in one float4 grid-stride pass (chapter 01's pattern):
 * w -= lr v, then v *= mu so that the next step's gradient lands on mu v. The parameter
 * array's length is a multiple of 4 (reference.h pads each tensor), so there is no tail.
 * Thread 0 also advances the batch cursor for the next step. */
__global__ void mlp_sgd_step(float *w, float *v, size_t n, float lr, float mu, int *cursor, int batch)
{
    size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    float4 *w4 = (float4 *)w, *v4 = (float4 *)v;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 p = w4[i], m = v4[i];
        w4[i] = make_float4(p.x - lr * m.x, p.y - lr * m.y, p.z - lr * m.z, p.w - lr * m.w);
        v4[i] = make_float4(mu * m.x, mu * m.y, mu * m.z, mu * m.w);
    }
    if (cursor && blockIdx.x == 0 && threadIdx.x == 0) *cursor += batch;
}

static inline void launch_sgd_step(float *w, float *v, size_t n, float lr, float mu, int *cursor, int batch)
{
    mlp_sgd_step<<<vadd_grid((long long)(n / 4)), VADD_BLOCK>>>(w, v, n, lr, mu, cursor, batch);
    CHECK_LAUNCH();
}

#endif
