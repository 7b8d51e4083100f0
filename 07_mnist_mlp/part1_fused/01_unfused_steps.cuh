/* Chapter 07: the unfused step of trainers naive, resident and best_kernels: one job per
 * kernel, every intermediate in memory, transposes made explicit, a gradient array of its
 * own. The row's gemm picks the products and transposes (naive, or the chapters' best),
 * its feed where a batch comes from (gathered and copied by the CPU, or gathered on the
 * GPU from the resident set), its sync_each whether every launch is waited for. */
#ifndef CH07_STEPS_UNFUSED_CUH
#define CH07_STEPS_UNFUSED_CUH

#include "07_mnist_mlp/part1_fused/01_unfused_kernels.cuh"
#include "07_mnist_mlp/driver/trainer.cuh"

/* What the unfused step keeps beyond the Trainer's buffers. */
typedef struct {
    float *grad, *a1, *z2, *p, *rowloss, *a1t, *w2t, *da1;
    ReduceWorkspace reduce_ws;
    float *h_x; /* FEED_COPY: the batch gathered on the host */
    int *h_y;
} UnfusedBuffers;

static void unfused_create(Trainer *t)
{
    UnfusedBuffers *u = (UnfusedBuffers *)xmalloc(sizeof *u);
    memset(u, 0, sizeof *u);
    t->own = u;
    int batch = t->batch, hidden = t->hidden;
    size_t bh = (size_t)batch * hidden * sizeof(float),
           bc = (size_t)batch * MLP_CLASSES * sizeof(float);
    size_t bx = (size_t)batch * IDX_PIXELS * sizeof(float), pb = t->l.total * sizeof(float);
    u->grad = (float *)dalloc(pb);
    u->a1 = (float *)dalloc(bh);
    u->z2 = (float *)dalloc(bc);
    u->p = (float *)dalloc(bc);
    u->rowloss = (float *)dalloc((size_t)batch * sizeof(float));
    u->a1t = (float *)dalloc(bh);
    u->w2t = (float *)dalloc((size_t)hidden * MLP_CLASSES * sizeof(float));
    u->da1 = (float *)dalloc(bh);
    CUDA_CHECK(cudaMemset(u->grad, 0, pb));
    reduce_workspace_alloc(&u->reduce_ws, batch);
    if (t->impl->extra.feed == FEED_COPY) {
        u->h_x = (float *)xmalloc(bx);
        u->h_y = (int *)xmalloc((size_t)batch * sizeof(int));
    }
}

static void unfused_destroy(Trainer *t)
{
    UnfusedBuffers *u = (UnfusedBuffers *)t->own;
    float *dev[] = {u->grad, u->a1, u->z2, u->p, u->rowloss, u->a1t, u->w2t, u->da1};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CUDA_CHECK(cudaFree(dev[i]));
    reduce_workspace_free(&u->reduce_ws);
    free(u->h_x);
    free(u->h_y);
    free(u);
    t->own = NULL;
}

#define SYNC_IF(t)                                                           \
    do {                                                                     \
        if ((t)->impl->extra.sync_each) CUDA_CHECK(cudaDeviceSynchronize()); \
    } while (0)

static void transpose(const Trainer *t, const float *in, float *out, int cols, int rows)
{
    if (t->impl->extra.gemm == GEMM_NAIVE)
        launch_transpose_naive(in, out, cols, rows);
    else
        launch_transpose_smem<64, 1, 8>(in, out, cols, rows);
}

/* The host-fed trainer: gather and normalize the batch on the CPU, copy it over. */
static void feed_from_host(Trainer *t, int first, int batch)
{
    UnfusedBuffers *u = (UnfusedBuffers *)t->own;
    const IdxDataset *d = t->train_host;
    for (int b = 0; b < batch; b++) {
        int img = t->h_order[first + b];
        for (int k = 0; k < IDX_PIXELS; k++)
            u->h_x[(size_t)b * IDX_PIXELS + k] =
                ((float)d->pixels[(size_t)img * IDX_PIXELS + k] / 255.0f - t->mean) / t->std;
        u->h_y[b] = d->labels[img];
    }
    CUDA_CHECK(cudaMemcpy(t->x, u->h_x, (size_t)batch * IDX_PIXELS * sizeof(float),
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->y, u->h_y, (size_t)batch * sizeof(int), cudaMemcpyHostToDevice));
}

/* The unfused step: one job per kernel, every intermediate in memory, transposes made
 * explicit. Step s covers order[s * t->batch .. + batch). */
static void step_unfused(Trainer *t, int s, int batch, float lr, float mu)
{
    UnfusedBuffers *u = (UnfusedBuffers *)t->own;
    const MlpLayout *l = &t->l;
    int H = t->hidden, first = s * t->batch;
    long long bh = (long long)batch * H;
    float *W1 = t->params + l->w1, *b1 = t->params + l->b1, *W2 = t->params + l->w2,
          *b2 = t->params + l->b2;
    float *gW1 = u->grad + l->w1, *gb1 = u->grad + l->b1, *gW2 = u->grad + l->w2,
          *gb2 = u->grad + l->b2;
    unsigned eb = mlp_blocks(bh, MLP_NAIVE_BLOCK), rb = mlp_blocks(batch, MLP_NAIVE_BLOCK);
    if (t->impl->extra.feed == FEED_COPY) {
        feed_from_host(t, first, batch);
    } else {
        MlpSource src = train_source(t);
        MlpBatch dst = {t->x, NULL, t->y, NULL, 0};
        launch_gather(&src, first, batch, &dst);
    }
    SYNC_IF(t);
    /* forward */
    gemm(t, batch, H, IDX_PIXELS, 1.0f, t->x, W1, 0.0f, t->z1);
    SYNC_IF(t);
    mlp_add_bias_naive<<<eb, MLP_NAIVE_BLOCK>>>(t->z1, b1, batch, H);
    CHECK_LAUNCH();
    SYNC_IF(t);
    mlp_relu_naive<<<eb, MLP_NAIVE_BLOCK>>>(t->z1, u->a1, bh);
    CHECK_LAUNCH();
    SYNC_IF(t);
    gemm(t, batch, MLP_CLASSES, H, 1.0f, u->a1, W2, 0.0f, u->z2);
    SYNC_IF(t);
    mlp_add_bias_naive<<<mlp_blocks((long long)batch * MLP_CLASSES, MLP_NAIVE_BLOCK),
                         MLP_NAIVE_BLOCK>>>(u->z2, b2, batch, MLP_CLASSES);
    CHECK_LAUNCH();
    SYNC_IF(t);
    mlp_softmax_naive<<<rb, MLP_NAIVE_BLOCK>>>(u->z2, u->p, batch);
    CHECK_LAUNCH();
    SYNC_IF(t);
    mlp_xent_naive<<<rb, MLP_NAIVE_BLOCK>>>(u->p, t->y, u->rowloss, t->dz2, batch);
    CHECK_LAUNCH();
    SYNC_IF(t);
    if (t->impl->extra.gemm == GEMM_NAIVE)
        reduce_launch_v1(u->rowloss, batch, t->step_loss + s, &u->reduce_ws);
    else
        reduce_sum(u->rowloss, batch, t->step_loss + s, &u->reduce_ws);
    SYNC_IF(t);
    /* backward */
    transpose(t, u->a1, u->a1t, H, batch);
    SYNC_IF(t);
    gemm(t, H, MLP_CLASSES, batch, 1.0f, u->a1t, t->dz2, 0.0f, gW2);
    SYNC_IF(t);
    mlp_colsum_naive<<<1, 32>>>(t->dz2, gb2, batch, MLP_CLASSES);
    CHECK_LAUNCH();
    SYNC_IF(t);
    transpose(t, W2, u->w2t, MLP_CLASSES, H);
    SYNC_IF(t);
    gemm(t, batch, H, MLP_CLASSES, 1.0f, t->dz2, u->w2t, 0.0f, u->da1);
    SYNC_IF(t);
    mlp_relu_backward_naive<<<eb, MLP_NAIVE_BLOCK>>>(u->da1, u->a1, t->dz1, bh);
    CHECK_LAUNCH();
    SYNC_IF(t);
    transpose(t, t->x, t->xt, IDX_PIXELS, batch);
    SYNC_IF(t);
    gemm(t, IDX_PIXELS, H, batch, 1.0f, t->xt, t->dz1, 0.0f, gW1);
    SYNC_IF(t);
    mlp_colsum_naive<<<mlp_blocks(H, MLP_NAIVE_BLOCK), MLP_NAIVE_BLOCK>>>(t->dz1, gb1, batch, H);
    CHECK_LAUNCH();
    SYNC_IF(t);
    /* update */
    mlp_sgd_naive<<<mlp_blocks((long long)l->total, MLP_NAIVE_BLOCK), MLP_NAIVE_BLOCK>>>(
        t->params, t->vel, u->grad, (long long)l->total, lr, mu);
    CHECK_LAUNCH();
    SYNC_IF(t);
}

static const StepFamily UNFUSED_STEPS = {
    .fused = 0,
    .capturable = 0,
    .create = unfused_create,
    .destroy = unfused_destroy,
    .begin_epoch = NULL,
    .step = step_unfused,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = NULL,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
