/* Exercise 3 (practice): the last block of the hidden backward steps b1, W2 and b2.
 *
 * Asked: the fused step's update launch walks all the parameters, W1 (784 x H) and the small ones
 * after it (b1, W2, b2: 11 thousand floats at H = 1024). Give mlp_hidden_backward a "last block
 * done" finish, chapter 03's v7 pattern: every block adds its share of W2's and b1's gradients into
 * the velocity, then draws a ticket, and the block that draws the last one takes the SGD step of
 * b1, W2 and b2, so that the update launch only walks W1. Predict first: how many of the update's
 * bytes go away, and what does the one block that steps 11 thousand parameters add to the hidden
 * backward's time?
 *
 * Answer: ex3_hidden_backward below is mlp_hidden_backward (kernels.cuh) for fp32, with the
 * finish after its atomics. The order that makes it safe: every block has read W2 and b1 (into
 * registers, before its first barrier) before it draws its ticket, so when the last ticket is
 * drawn no block reads them any more and they may be overwritten; b2's gradient came from the
 * output layer, the launch before. The velocity is read past L1 (__ldcg), where the other blocks'
 * atomics landed (in L2). The ticket is chapter 03's: the block's barrier (its threads' atomics
 * before thread 0's draw), a fence by thread 0 before the draw and one after the last draw, and the
 * last block resets the counter for the next launch (and the next replay of the graph). The
 * arithmetic is the update's (w -= lr v, then v = mu v), so the results are the fused step's.
 *
 * What it is worth: the update launch loses 11 thousand of its 814 thousand floats and keeps its
 * launch, while the hidden backward gets a serial tail: one block of 256 threads walking 11
 * thousand floats after every other block has finished, and the fence and the atomic of every
 * block's ticket. Expect nothing gained, or a little lost: the tail is one block's latency-bound
 * loop, where the same floats cost the update's grid-stride pass a few extra iterations spread over
 * the whole GPU. A launch is saved only when a whole launch's work moves, which is what optimized's
 * backward kernel does (part1_fused/08_backward_kernel.cuh). */
#ifndef CH07_EX3_LAST_BLOCK_CUH
#define CH07_EX3_LAST_BLOCK_CUH

#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

/* mlp_hidden_backward for fp32 (dz1 always written), then the last block to finish steps
 * small.p and small.v (b1, W2, b2: n floats, a multiple of 4) with lr and mu. */
__global__ void __launch_bounds__(MLP_BACK_COLS *MLP_BACK_GROUPS)
    ex3_hidden_backward(const float *z1, const float *b1, const float *dz2, const float *w2,
                        int rows, int hidden, int rows_per_block, float *dz1, float *gw2,
                        float *gb1, int *cursor, float *small_p, float *small_v, size_t n, float lr,
                        float mu, unsigned *ticket)
{
    __shared__ float s_dz2[MLP_BACK_MAX_ROWS][MLP_CLASSES];
    __shared__ float s_sum[MLP_BACK_GROUPS][MLP_CLASSES + 1][MLP_BACK_COLS];
    __shared__ bool s_last;
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
    float zr[MLP_BACK_THREAD_ROWS];
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
        dz1[(size_t)(r0 + first + r) * hidden + j] = d;
        gb += d;
    }
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) s_sum[g][c][tx] = gw[c];
    s_sum[g][MLP_CLASSES][tx] = gb;
    __syncthreads();
    for (int i = tid; i < (MLP_CLASSES + 1) * MLP_BACK_COLS; i += MLP_BACK_COLS * MLP_BACK_GROUPS) {
        int c = i / MLP_BACK_COLS, col = i % MLP_BACK_COLS, unit = blockIdx.x * MLP_BACK_COLS + col;
        if (unit >= hidden) continue;
        float v = 0.0f;
        for (int q = 0; q < MLP_BACK_GROUPS; q++) v += s_sum[q][c][col];
        atomicAdd(c < MLP_CLASSES ? gw2 + (size_t)unit * MLP_CLASSES + c : gb1 + unit, v);
    }

    /* the ticket: this block's atomics, then thread 0's fence and draw */
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        s_last = atomicAdd(ticket, 1u) == gridDim.x * gridDim.y - 1;
        if (s_last) {
            *ticket = 0;
            __threadfence();
        }
    }
    __syncthreads();
    if (!s_last) return;
    /* the last block: every share is in the velocity; step b1, W2, b2 (the update's arithmetic) */
    float4 *p4 = (float4 *)small_p, *v4 = (float4 *)small_v;
    for (size_t i = tid; i < n / 4; i += MLP_BACK_COLS * MLP_BACK_GROUPS) {
        float4 p = p4[i], m = __ldcg(v4 + i);
        p4[i] = make_float4(p.x - lr * m.x, p.y - lr * m.y, p.z - lr * m.z, p.w - lr * m.w);
        v4[i] = make_float4(mu * m.x, mu * m.y, mu * m.z, mu * m.w);
    }
}

/* The family's own buffer: the ticket counter, zero between launches. */
static void ex3_create(Trainer *t)
{
    t->own = dalloc(sizeof(unsigned));
    CUDA_CHECK(cudaMemset(t->own, 0, sizeof(unsigned)));
}

static void ex3_destroy(Trainer *t)
{
    CUDA_CHECK(cudaFree(t->own));
    t->own = NULL;
}

/* The fused step, the small parameters stepped by the hidden backward's last block, and the
 * update launch over W1 only (it is first in the parameter array: l.b1 floats). */
static void ex3_step(Trainer *t, int s, int batch, float lr, float mu)
{
    (void)s;
    const MlpLayout *l = &t->l;
    int H = t->hidden;
    float *P = t->params, *V = t->vel;
    gemm(t, batch, H, IDX_PIXELS, 1.0f, t->x, P + l->w1, 1.0f, t->z1);
    launch_output_layer<true>(t->z1, P + l->b1, P + l->w2, P + l->b2, t->y, batch, H, t->dz2,
                              V + l->b2, t->step_loss, t->cursor, t->batch, NULL);
    int per_block = (batch + 7) / 8;
    per_block = per_block > MLP_BACK_MAX_ROWS ? MLP_BACK_MAX_ROWS : per_block;
    dim3 grid(mlp_blocks(H, MLP_BACK_COLS), mlp_blocks(batch, per_block)),
        block(MLP_BACK_COLS, MLP_BACK_GROUPS);
    ex3_hidden_backward<<<grid, block>>>(t->z1, P + l->b1, t->dz2, P + l->w2, batch, H, per_block,
                                         t->dz1, V + l->w2, V + l->b1, t->cursor, P + l->b1,
                                         V + l->b1, l->total - l->b1, lr, mu, (unsigned *)t->own);
    CHECK_LAUNCH();
    gemm(t, IDX_PIXELS, H, batch, 1.0f, t->xt, t->dz1, 1.0f, V + l->w1);
    MlpSource next = train_source(t);
    MlpBatch dst = fused_batch(t);
    launch_update(P, V, l->b1, lr, mu, &next, t->cursor, t->n_train, t->batch, &dst);
}

static const StepFamily EX3_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = ex3_create,
    .destroy = ex3_destroy,
    .begin_epoch = gather_first_batch,
    .step = ex3_step,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = NULL,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
