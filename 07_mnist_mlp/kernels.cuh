/* Chapter 07: the kernels of an MLP training step that no earlier chapter teaches, and
 * where each of them lives.
 *
 * The matrix products come from chapter 05 (sgemm_naive, sgemm_best), the transposes of
 * the unfused trainers from chapter 02, the warp-level sums from chapter 03 and the
 * grid-stride float4 pattern (with its grid size, vadd_grid) from chapter 01: this file
 * includes them. What the chapter adds besides those:
 *
 *   every trainer:
 *     mlp_gather            batch rows of the resident data set, normalized (+ transposed
 *                           copy): part1_fused/02_batch_gather.cuh, with the batch's types
 *   unfused, one job per kernel (the naive trainer and its first steps):
 *                           part1_fused/01_unfused_kernels.cuh
 *   fused (the fused step, here):
 *     mlp_output_layer      a1 = relu(z1 + b1) on the fly, z2 = a1 W2 + b2, softmax, loss,
 *                           dz2 and db2 in one kernel
 *     mlp_hidden_backward   a1 again on the fly, dz1 = relu'(z1 + b1) * (dz2 W2^T),
 *                           dW2 += a1^T dz2, db1 += sum dz1
 *     mlp_update_and_gather w -= lr v; v *= mu over all parameters at once, float4, and in
 *                           the same grid the gather of the next step's batch
 *   optimized (and bf16):
 *     mlp_backward_sgd      the backward pass and the update in one kernel:
 *                           part1_fused/08_backward_kernel.cuh (its SGD steps in
 *                           08_backward_kernel_sgd.cuh, its bf16 product in
 *                           part2_tensor_cores/02_bf16_backward_mma.cuh)
 *   tensor cores (tf32, bf16):
 *     mlp_update_tc         the update that also writes W1's low-precision transposed copy:
 *                           part2_tensor_cores/01_tc_kernels.cuh
 *   persistent trainers:
 *     mlp_persistent        a whole epoch in one launch: part4_persistent/09_kernel.cuh
 *                           (its parts in part4_persistent/01_ to 08_)
 *
 * The gather and the hidden backward are templates on how they store the operands of the
 * next matrix product (MlpFp32 here: fp32, as computed); the tensor-core trainers store them
 * in bf16 or rounded to TF32, dz1 transposed (part2_tensor_cores/01_tc_kernels.cuh, which
 * also has their update).
 *
 * The fused trainer keeps no separate gradient: the velocity v of SGD with momentum is
 * the buffer the gradient is accumulated into. Each step's update leaves v = mu v, then
 * the next step's backward pass adds its gradient on top (atomics, or the GEMM's beta = 1),
 * which is exactly v = mu v + g. Kernels of the fused step read the batch position from
 * a device counter (`cursor`) that the hidden-layer backward kernel advances, so the same
 * launches can be captured once in a CUDA graph and replayed for every step. */
#ifndef CH07_KERNELS_CUH
#define CH07_KERNELS_CUH

#include "01_vector_add/kernels.cuh"
#include "02_thread_indexing/kernels.cuh"
#include "03_reduction/kernels.cuh"
#include "05_matmul_tiled/kernels.cuh"
#include "07_mnist_mlp/driver/idx.h"
#include "07_mnist_mlp/part1_fused/02_batch_gather.cuh"
#include "07_mnist_mlp/part2_tensor_cores/01_roundings.h"
#include "07_mnist_mlp/driver/cpu_reference.h"

/* ------------------------------------------------------------------ fused kernels */

#define MLP_OUT_THREADS 256

/* The softmax of one row of 10 logits held one a lane (lane c: class c; lanes 10-31, mine
 * false, only take part in the shuffles): into zmax and best the maximum and, on a tie, the
 * lower class, as argmax does; into e this lane's exp(z - zmax), into sum their sum and into
 * zlabel the label's logit, all by warp shuffles. best comes in as this lane's class. */
__device__ __forceinline__ void mlp_softmax_row(float z, bool mine, int label, float &zmax,
                                                int &best, float &e, float &sum, float &zlabel)
{
    zmax = mine ? z : -INFINITY;
    for (int off = 16; off > 0; off /= 2) {
        float other = __shfl_xor_sync(REDUCE_FULL_MASK, zmax, off);
        int other_best = __shfl_xor_sync(REDUCE_FULL_MASK, best, off);
        if (other > zmax || (other == zmax && other_best < best)) zmax = other, best = other_best;
    }
    e = mine ? expf(z - zmax) : 0.0f;
    sum = __shfl_sync(REDUCE_FULL_MASK, reduce_warp_sum(e), 0);
    zlabel = __shfl_sync(REDUCE_FULL_MASK, z, label);
}

/* dz1 of one unit in one row: da1 = dz2 . W2[unit], the ten products added in class order
 * from zero, kept where the unit's activation a1 (or z1 + b1: the same sign) is above 0.
 * Every kernel that makes dz1 makes it here, so that all of them make the same bits. */
__device__ __forceinline__ float mlp_dz1_of(float a1, const float *d2, const float *w)
{
    float da = 0.0f;
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) da = fmaf(d2[c], w[c], da);
    return a1 > 0.0f ? da : 0.0f;
}

/* The end of a row of the output layer, in warp 0: lanes 0-9 own one class each and finish
 * the row with warp shuffles: bias, the maximum and argmax, softmax, -log p[y], and when
 * training dz2 = (p - onehot) / batch (with DZ1 also into s_dz2, for the whole block). The
 * loss, the count of correct rows and the b2 gradient (the column sums of dz2) go to their
 * totals by atomics. */
template <bool TRAIN, bool DZ1> __device__ __forceinline__ void
mlp_output_finish(const float (&s_part)[MLP_OUT_THREADS / 32][MLP_CLASSES], float *s_dz2, int r,
                  int lane, const float *b2, const int *y, float inv_batch, float *dz2, float *gb2,
                  float *loss_slots, const int *cursor, int full_batch, int *correct)
{
    bool mine = lane < MLP_CLASSES; /* lanes 10-31 take part in the shuffles only */
    int c = mine ? lane : 0, best = c, label = y[r];
    float z = b2[c];
    for (int w = 0; w < MLP_OUT_THREADS / 32; w++) z += s_part[w][c];
    float zmax, e, sum, zlabel; /* best: the lane's class on the way in */
    mlp_softmax_row(z, mine, label, zmax, best, e, sum, zlabel);
    if (lane == 0) {
        atomicAdd(loss_slots + (cursor ? *cursor / full_batch : 0), logf(sum) + zmax - zlabel);
        if (correct && best == label) atomicAdd(correct, 1);
    }
    if (TRAIN && mine) {
        float d = (e / sum - (lane == label ? 1.0f : 0.0f)) * inv_batch;
        dz2[(size_t)r * MLP_CLASSES + lane] = d;
        atomicAdd(gb2 + lane, d);
        if (DZ1) s_dz2[lane] = d;
    }
}

/* A row of dz1: for each unit k of this thread, a1 = max(z1 + b1, 0) again (the block has
 * just read the row), and mlp_dz1_of. */
__device__ __forceinline__ void mlp_output_dz1_row(const float *s_dz2, const float *zr,
                                                   const float *b1, const float *w2, int hidden,
                                                   float *dz1_row)
{
    float d2[MLP_CLASSES];
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) d2[c] = s_dz2[c];
#pragma unroll 4
    for (int k = threadIdx.x; k < hidden; k += MLP_OUT_THREADS)
        dz1_row[k] = mlp_dz1_of(fmaxf(zr[k] + b1[k], 0.0f), d2, w2 + (size_t)k * MLP_CLASSES);
}

/* mlp_output_layer: one block of 256 threads per batch row. The bias and ReLU of the
 * hidden layer are applied on the fly as z1 is read (a1 = max(z1 + b1, 0) is never
 * stored), each thread takes hidden units k, k + 256, ... and accumulates the 10 dot
 * products with W2's rows, and chapter 03's warp sum adds them within each warp. Then
 * warp 0 finishes the row (mlp_output_finish). This one kernel replaces the bias and ReLU
 * passes, a GEMM with N = 10 (which leaves most of a 64-wide tile empty), the second bias
 * pass, softmax, the loss kernel, its sum and a column sum. (A single thread finishing the
 * row made every block wait for a serial chain of 20 exponentials: 10 lanes take one each.
 * And 256 threads, not 128: at H = 1024 a thread's four units are one unrolled round of
 * loads, one memory latency where 128 threads waited for two.) With DZ1 the block also
 * makes its row of dz1, which the hidden backward makes otherwise: a row of dz1 needs only
 * that row's dz2, and the block has it. */
template <bool TRAIN, bool DZ1 = false> __global__ void __launch_bounds__(MLP_OUT_THREADS)
    mlp_output_layer(const float *z1, const float *b1, const float *w2, const float *b2,
                     const int *y, int hidden, float inv_batch, float *dz2, float *gb2,
                     float *loss_slots, const int *cursor, int full_batch, int *correct, float *dz1)
{
    static_assert(TRAIN || !DZ1, "dz1 needs dz2");
    __shared__ float s_part[MLP_OUT_THREADS / 32][MLP_CLASSES];
    __shared__ float s_dz2[MLP_CLASSES];
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
    if (warp == 0)
        mlp_output_finish<TRAIN, DZ1>(s_part, s_dz2, r, lane, b2, y, inv_batch, dz2, gb2,
                                      loss_slots, cursor, full_batch, correct);
    if constexpr (DZ1) {
        __syncthreads();
        mlp_output_dz1_row(s_dz2, zr, b1, w2, hidden, dz1 + (size_t)r * hidden);
    }
}

/* dz1 not NULL (training only): the layer also makes dz1. */
template <bool TRAIN>
static inline void launch_output_layer(const float *z1, const float *b1, const float *w2,
                                       const float *b2, const int *y, int rows, int hidden,
                                       float *dz2, float *gb2, float *loss_slots, const int *cursor,
                                       int full_batch, int *correct, float *dz1 = NULL)
{
    if constexpr (TRAIN) {
        if (dz1) {
            mlp_output_layer<true, true>
                <<<rows, MLP_OUT_THREADS>>>(z1, b1, w2, b2, y, hidden, 1.0f / rows, dz2, gb2,
                                            loss_slots, cursor, full_batch, correct, dz1);
            CHECK_LAUNCH();
            return;
        }
    }
    mlp_output_layer<TRAIN><<<rows, MLP_OUT_THREADS>>>(z1, b1, w2, b2, y, hidden, 1.0f / rows, dz2,
                                                       gb2, loss_slots, cursor, full_batch, correct,
                                                       NULL);
    CHECK_LAUNCH();
}

#define MLP_BACK_COLS 64
#define MLP_BACK_GROUPS 4
#define MLP_BACK_MAX_ROWS 32
#define MLP_BACK_THREAD_ROWS (MLP_BACK_MAX_ROWS / MLP_BACK_GROUPS)

/* The tensor-core trainers' dz1t (part2_tensor_cores/01_roundings.h): a thread's `count` values of
 * hidden unit j, rows row0 .. row0 + count - 1 of the batch, into dst = dz1t + j * rows + row0,
 * rounded: one wide store when the piece is whole and aligned, else one by one. */
template <typename S>
__device__ __forceinline__ void mlp_store_column(typename S::T *dst,
                                                 const float (&v)[MLP_BACK_THREAD_ROWS], int count,
                                                 int rows, int row0)
{
    static_assert(MLP_BACK_THREAD_ROWS == MLP_COLUMN_ROWS,
                  "a thread's rows are one 8-row piece of dz1t");
    if (mlp_column_vector(rows, row0, count)) {
        S::store8(dst, v);
        return;
    }
#pragma unroll
    for (int r = 0; r < MLP_BACK_THREAD_ROWS; r++)
        if (r < count) dst[r] = S::cvt(v[r]);
}

/* mlp_hidden_backward: a block owns 64 hidden units for `rows_per_block` batch rows;
 * thread (j, g) owns unit j for every fourth group of those rows. It keeps W2's row j
 * (10 floats) and b1[j] in registers and the block's dz2 rows in shared memory; per row it
 * recomputes a1 = max(z1 + b1, 0), forms da1 = dz2 . W2[j], masks it with the ReLU
 * (a1 > 0 exactly when z1 + b1 > 0), writes dz1, and accumulates the dW2 row j (10 sums of
 * a1 * dz2) and the b1 gradient. The four row groups' sums meet in shared memory, and one
 * atomic per value adds the block's share to the velocity. A GEMM with K = 10, the ReLU
 * mask, a transpose and a GEMM with N = 10 become one pass over z1. rows_per_block is
 * chosen so that about 8 blocks share each unit (few atomics), and the four row groups give
 * each SM enough warps to hide the latency of the loads (one group a block left most of
 * the SM's schedulers idle). Thread (0, 0) of the first block advances the batch cursor
 * (NULL: none): output_layer, the last reader of this step's position, has finished.
 * dz1 NULL (fp32 only): the sums alone (optimized's output layer has made dz1).
 * For the tensor-core trainers (S::TC) dz1 goes out transposed and rounded, as dz1t
 * (H x rows), the Bt of their dW1 product: each thread keeps its rows' values of unit j
 * and stores them as one piece of row j of dz1t (mlp_store_column). */
template <typename S> __global__ void __launch_bounds__(MLP_BACK_COLS *MLP_BACK_GROUPS)
    mlp_hidden_backward(const float *z1, const float *b1, const float *dz2, const float *w2,
                        int rows, int hidden, int rows_per_block, typename S::T *dz1, float *gw2,
                        float *gb1, int *cursor)
{
    __shared__ float s_dz2[MLP_BACK_MAX_ROWS][MLP_CLASSES];
    __shared__ float s_sum[MLP_BACK_GROUPS][MLP_CLASSES + 1][MLP_BACK_COLS];
    int tx = threadIdx.x, g = threadIdx.y, tid = g * MLP_BACK_COLS + tx;
    int r0 = blockIdx.y * rows_per_block, j = blockIdx.x * MLP_BACK_COLS + tx;
    int nrows = rows - r0 < rows_per_block ? rows - r0 : rows_per_block;
    if (cursor && tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) *cursor += rows;
    int per_thread = (rows_per_block + MLP_BACK_GROUPS - 1) / MLP_BACK_GROUPS,
        first = g * per_thread;
    int mine = j < hidden ? min(per_thread, nrows - first) : 0;
    float w[MLP_CLASSES], gw[MLP_CLASSES], gb = 0.0f, bias = j < hidden ? b1[j] : 0.0f;
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) {
        w[c] = j < hidden ? w2[(size_t)j * MLP_CLASSES + c] : 0.0f;
        gw[c] = 0.0f;
    }
    /* all of this thread's loads first, back to back, dz2's into shared memory among them:
     * one memory latency before the barrier, not one for dz2 and another for z1 after it */
    float zr[MLP_BACK_THREAD_ROWS], column[MLP_BACK_THREAD_ROWS];
#pragma unroll
    for (int r = 0; r < MLP_BACK_THREAD_ROWS; r++)
        if (r < mine) zr[r] = z1[(size_t)(r0 + first + r) * hidden + j];
    for (int i = tid; i < nrows * MLP_CLASSES; i += MLP_BACK_COLS * MLP_BACK_GROUPS)
        s_dz2[i / MLP_CLASSES][i % MLP_CLASSES] = dz2[(size_t)r0 * MLP_CLASSES + i];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < MLP_BACK_THREAD_ROWS; r++) {
        if (r >= mine) break;
        const float *d2 = s_dz2[first + r];
        float a = fmaxf(zr[r] + bias, 0.0f);
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) gw[c] = fmaf(a, d2[c], gw[c]);
        float d = mlp_dz1_of(a, d2, w);
        if constexpr (S::TC)
            column[r] = d;
        else if (dz1)
            dz1[(size_t)(r0 + first + r) * hidden + j] = d;
        gb += d;
    }
    if constexpr (S::TC)
        mlp_store_column<S>(dz1 + (size_t)j * rows + r0 + first, column, mine, rows, r0 + first);
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) s_sum[g][c][tx] = gw[c];
    s_sum[g][MLP_CLASSES][tx] = gb;
    __syncthreads();
    /* the block's (10 + 1) x 64 sums, one a thread, first the four groups added */
    for (int i = tid; i < (MLP_CLASSES + 1) * MLP_BACK_COLS; i += MLP_BACK_COLS * MLP_BACK_GROUPS) {
        int c = i / MLP_BACK_COLS, col = i % MLP_BACK_COLS, unit = blockIdx.x * MLP_BACK_COLS + col;
        if (unit >= hidden) continue;
        float v = 0.0f;
        for (int q = 0; q < MLP_BACK_GROUPS; q++) v += s_sum[q][c][col];
        atomicAdd(c < MLP_CLASSES ? gw2 + (size_t)unit * MLP_CLASSES + c : gb1 + unit, v);
    }
}

template <typename S = MlpFp32>
static inline void launch_hidden_backward(const float *z1, const float *b1, const float *dz2,
                                          const float *w2, int rows, int hidden, typename S::T *dz1,
                                          float *gw2, float *gb1, int *cursor,
                                          cudaStream_t stream = cudaStreamPerThread)
{
    int per_block = (rows + 7) / 8;
    per_block = per_block > MLP_BACK_MAX_ROWS ? MLP_BACK_MAX_ROWS : per_block;
    dim3 grid(mlp_blocks(hidden, MLP_BACK_COLS), mlp_blocks(rows, per_block)),
        block(MLP_BACK_COLS, MLP_BACK_GROUPS);
    mlp_hidden_backward<S><<<grid, block, 0, stream>>>(z1, b1, dz2, w2, rows, hidden, per_block,
                                                       dz1, gw2, gb1, cursor);
    CHECK_LAUNCH();
}

#define MLP_UPDATE_THREADS 256

/* mlp_update_and_gather: the last launch of a fused step, two independent jobs side by
 * side in one grid.
 *   blocks [gather_blocks, end): every parameter in one float4 grid-stride pass (chapter
 *     01's pattern): w -= lr v, then v *= mu so that the next step's gradient lands on
 *     mu v. The parameter array's length is a multiple of 4 (driver/cpu_reference.h pads each
 *     tensor), so there is no tail.
 *   blocks [0, gather_blocks): the next step's batch, rows order[*cursor ..] (clipped at
 *     n_train: the last batch may be short, and after the last there is none), and
 *     z1 cleared for its forward GEMM.
 * A gather launched after the update would wait for it, and on its own it keeps the GPU
 * busy with little: three dependent loads (cursor, order, pixel) a thread and 2.6 MB of
 * stores. Here its latency hides behind the update's streaming traffic, and the step has
 * one launch fewer. */
/* Block `block` of gather_blocks: its tile of the next batch, rows order[*cursor ..]
 * clipped at n_train, and its share of clearing dst.zero (nothing after the last batch). */
template <typename S>
__device__ __forceinline__ void mlp_gather_next(const MlpSource src, const int *cursor, int n_train,
                                                int batch, const MlpBatchOf<S> dst, int block,
                                                int gather_blocks)
{
    int start = *cursor, rows = n_train - start < batch ? n_train - start : batch;
    if (rows <= 0) return; /* the epoch's last step: no batch follows */
    mlp_clear(dst, (size_t)block * MLP_UPDATE_THREADS + threadIdx.x,
              (size_t)gather_blocks * MLP_UPDATE_THREADS);
    mlp_gather_tile(src, start, rows, dst, block, threadIdx.x % MLP_TILE, threadIdx.x / MLP_TILE);
}

/* The update job: w -= lr v, then v *= mu, over n4 float4s, thread `thread` of `threads`. */
__device__ __forceinline__ void mlp_update_range(float *w, float *v, size_t n4, float lr, float mu,
                                                 size_t thread, size_t threads)
{
    float4 *w4 = (float4 *)w, *v4 = (float4 *)v;
    for (size_t i = thread; i < n4; i += threads) {
        float4 p = w4[i], m = v4[i];
        w4[i] = make_float4(p.x - lr * m.x, p.y - lr * m.y, p.z - lr * m.z, p.w - lr * m.w);
        v4[i] = make_float4(mu * m.x, mu * m.y, mu * m.z, mu * m.w);
    }
}

__global__ void __launch_bounds__(MLP_UPDATE_THREADS)
    mlp_update_and_gather(float *w, float *v, size_t n, float lr, float mu, int gather_blocks,
                          const MlpSource src, const int *cursor, int n_train, int batch,
                          const MlpBatch dst)
{
    int block = blockIdx.x;
    if (block < gather_blocks) {
        mlp_gather_next(src, cursor, n_train, batch, dst, block, gather_blocks);
        return;
    }
    mlp_update_range(w, v, n / 4, lr, mu,
                     (size_t)(block - gather_blocks) * MLP_UPDATE_THREADS + threadIdx.x,
                     (size_t)(gridDim.x - gather_blocks) * MLP_UPDATE_THREADS);
}

/* The update alone (next NULL), or with the gather of the next batch (up to `batch` rows
 * from position *cursor of next) into dst. */
static inline void launch_update(float *w, float *v, size_t n, float lr, float mu,
                                 const MlpSource *next, const int *cursor, int n_train, int batch,
                                 const MlpBatch *dst)
{
    static_assert(MLP_UPDATE_THREADS == MLP_GATHER_THREADS && MLP_UPDATE_THREADS == VADD_BLOCK,
                  "block sizes");
    MlpSource src = {};
    MlpBatch to = {};
    int gather_blocks = 0;
    if (next) src = *next, to = *dst, gather_blocks = mlp_gather_blocks(batch);
    mlp_update_and_gather<<<gather_blocks + vadd_grid((long long)(n / 4)), MLP_UPDATE_THREADS>>>(
        w, v, n, lr, mu, gather_blocks, src, cursor, n_train, batch, to);
    CHECK_LAUNCH();
}

#endif
