/* Exercise 5 (stretch): the output layer and the hidden backward in one launch, with no hand-off.
 *
 * Asked: the fused step has two small launches between its products: the output layer (one block
 * a row: z2, softmax, loss, dz2) and the hidden backward (dz1, and the sums over the batch for W2's
 * and b1's gradients). The chapter tried them as one kernel whose hidden-backward blocks waited for
 * the output rows they read, handed over through L2, and it was slower than two launches. Build
 * the other way: a block takes a few rows of the batch and does both for them, so that no block
 * ever waits for another (four launches a step). Predict first: what does the step save (a launch
 * inside the graph, from the lesson's leave-one-out measurements), and what does it pay (the rows
 * a block finishes one after another, and the atomics: every block adds its share of W2's and b1's
 * gradients, 11 thousand floats at H = 1024)? At which batch size does it win, if at all?
 *
 * Answer: ex5_output_backward below. A block takes R consecutive rows (R chosen so that there are
 * about 64 blocks, at least one row each). For each row it runs the output layer's code
 * (kernels.cuh's mlp_output_layer: the ten dot products over the units, chapter 03's warp sums,
 * mlp_output_finish), keeping the row's dz2 in shared memory; then each thread takes units k,
 * k + 256, ... and, over the block's rows, makes dz1 (mlp_dz1_of, the same bits as every other
 * kernel) and the sums of a1 dz2 and of dz1, which go into the velocity with one atomic a value and
 * unit, as the hidden backward's do. The step passes positions as arguments (the loss slot, the
 * next batch's start in a device array of starts), so it runs as a whole-epoch graph, where every
 * step is captured with its own. The trade: blocks count R times fewer than the output layer's one
 * a row, each walks its rows one after another, and the atomics count the blocks times 11 thousand
 * (the hidden backward's blocks are 8 row groups a column of units). At batch 32 (one row a block,
 * 32 blocks) a launch's few microseconds in the graph against 32 x 11 thousand atomics; at 256
 * (four rows a block, 64 blocks) a launch against 64 x 11 thousand atomics and rows done four in a
 * row. optimized's backward kernel shows the other way to save launches at batch 32: move the
 * hidden backward into the dW1 product, where nothing of it needs an atomic but W2's and b1's
 * sums. */
#ifndef CH07_EX5_OUT_BACKWARD_CUH
#define CH07_EX5_OUT_BACKWARD_CUH

#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

#define EX5_BLOCKS 64  /* blocks the rows are spread over (about) */
#define EX5_MAX_ROWS 8 /* rows a block takes at most (its shared dz2) */

/* Rows a block takes for a batch of `rows`: about EX5_BLOCKS blocks, at most EX5_MAX_ROWS rows. */
static inline int ex5_rows_per_block(int rows)
{
    int r = (rows + EX5_BLOCKS - 1) / EX5_BLOCKS;
    return r > EX5_MAX_ROWS ? EX5_MAX_ROWS : r;
}

/* Rows r0 .. r0 + per_block - 1 (clipped at `rows`): the output layer of each (dz2, the loss, the
 * b2 gradient), then dz1 and this block's shares of W2's and b1's gradients. */
__global__ void __launch_bounds__(MLP_OUT_THREADS)
    ex5_output_backward(const float *z1, const float *b1, const float *w2, const float *b2,
                        const int *y, int rows, int hidden, int per_block, float *dz2, float *dz1,
                        float *gw2, float *gb1, float *gb2, float *loss_slot, int full_batch)
{
    __shared__ float s_part[MLP_OUT_THREADS / 32][MLP_CLASSES];
    __shared__ float s_dz2[EX5_MAX_ROWS][MLP_CLASSES];
    int r0 = blockIdx.x * per_block, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int nrows = rows - r0 < per_block ? rows - r0 : per_block;
    float inv_batch = 1.0f / rows;
    for (int i = 0; i < nrows; i++) { /* the output layer, row by row */
        const float *zr = z1 + (size_t)(r0 + i) * hidden;
        float acc[MLP_CLASSES];
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) acc[c] = 0.0f;
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
            mlp_output_finish<true, true>(s_part, s_dz2[i], r0 + i, lane, b2, y, inv_batch, dz2,
                                          gb2, loss_slot, NULL, full_batch, NULL);
        __syncthreads(); /* s_part free again, s_dz2[i] written */
    }
    /* the hidden backward of the block's rows: unit k of thread k, k + 256, ... */
    for (int k = threadIdx.x; k < hidden; k += MLP_OUT_THREADS) {
        float w[MLP_CLASSES], gw[MLP_CLASSES], gb = 0.0f, bias = b1[k];
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) w[c] = w2[(size_t)k * MLP_CLASSES + c], gw[c] = 0.0f;
        for (int i = 0; i < nrows; i++) {
            float a = fmaxf(z1[(size_t)(r0 + i) * hidden + k] + bias, 0.0f);
#pragma unroll
            for (int c = 0; c < MLP_CLASSES; c++) gw[c] = fmaf(a, s_dz2[i][c], gw[c]);
            float d = mlp_dz1_of(a, s_dz2[i], w);
            dz1[(size_t)(r0 + i) * hidden + k] = d;
            gb += d;
        }
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) atomicAdd(gw2 + (size_t)k * MLP_CLASSES + c, gw[c]);
        atomicAdd(gb1 + k, gb);
    }
}

/* The epoch's starts (starts[i] = i * batch), where the update's gather finds the next batch. */
static void ex5_create(Trainer *t)
{
    int steps = steps_per_epoch(t);
    int *starts = (int *)xmalloc((size_t)(steps + 1) * sizeof(int));
    for (int i = 0; i <= steps; i++) starts[i] = i * t->batch;
    t->own = dalloc((size_t)(steps + 1) * sizeof(int));
    CUDA_CHECK(
        cudaMemcpy(t->own, starts, (size_t)(steps + 1) * sizeof(int), cudaMemcpyHostToDevice));
    free(starts);
}

static void ex5_destroy(Trainer *t)
{
    CUDA_CHECK(cudaFree(t->own));
    t->own = NULL;
}

static void ex5_launch(Trainer *t, int s, int batch)
{
    const MlpLayout *l = &t->l;
    float *P = t->params, *V = t->vel;
    int per_block = ex5_rows_per_block(batch);
    ex5_output_backward<<<mlp_blocks(batch, per_block), MLP_OUT_THREADS>>>(
        t->z1, P + l->b1, P + l->w2, P + l->b2, t->y, batch, t->hidden, per_block, t->dz2, t->dz1,
        V + l->w2, V + l->b1, V + l->b2, t->step_loss + s, t->batch);
    CHECK_LAUNCH();
}

/* Four launches: the forward product, the output layer with the hidden backward, the dW1
 * product, the update with the gather of batch s + 1 (from starts; none after the last). */
static void ex5_step(Trainer *t, int s, int batch, float lr, float mu)
{
    const MlpLayout *l = &t->l;
    float *P = t->params, *V = t->vel;
    MlpSource next = train_source(t);
    MlpBatch dst = fused_batch(t);
    gemm(t, batch, t->hidden, IDX_PIXELS, 1.0f, t->x, P + l->w1, 1.0f, t->z1);
    ex5_launch(t, s, batch);
    gemm(t, IDX_PIXELS, t->hidden, batch, 1.0f, t->xt, t->dz1, 1.0f, V + l->w1);
    launch_update(P, V, l->total, lr, mu, &next, (const int *)t->own + s + 1, t->n_train, t->batch,
                  &dst);
}

/* The four launches one by one for the bench (a whole batch, step 0's slot, lr 0 and momentum
 * 1; the update gathers batch 1). */
static void ex5_stage(Trainer *t, int stage)
{
    const MlpLayout *l = &t->l;
    int B = t->batch, H = t->hidden;
    MlpSource src = train_source(t);
    MlpBatch dst = fused_batch(t);
    switch (stage) {
        case 0: gemm(t, B, H, IDX_PIXELS, 1.0f, t->x, t->params + l->w1, 1.0f, t->z1); break;
        case 1: ex5_launch(t, 0, B); break;
        case 2: gemm(t, IDX_PIXELS, H, B, 1.0f, t->xt, t->dz1, 1.0f, t->vel + l->w1); break;
        default:
            launch_update(t->params, t->vel, l->total, 0.0f, 1.0f, &src, (const int *)t->own + 1,
                          t->n_train, B, &dst);
            break;
    }
}

static const char *const EX5_STAGE_NAMES[] = {"gemm_forward", "output_backward", "gemm_dW1",
                                              "update_and_gather"};
static const StepStages EX5_STAGES = {4, EX5_STAGE_NAMES, ex5_stage, NULL};

static const StepFamily EX5_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = ex5_create,
    .destroy = ex5_destroy,
    .begin_epoch = gather_first_batch,
    .step = ex5_step,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = &EX5_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
