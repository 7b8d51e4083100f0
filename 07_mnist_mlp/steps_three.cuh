/* Chapter 07: the step of the optimized trainer, three launches:
 *
 *   gemm_forward        z1 += x W1                 chapter 05's sgemm_best (tuned plan)
 *   output_layer        as in the fused step       kernels.cuh
 *   backward_and_update dz1, dW1, dW2, db1, the SGD step of every parameter, and the next
 *                       batch's gather, in one kernel (kernels_backward.cuh)
 *
 * where the fused step (steps_fused.cuh) takes five. The backward kernel reads this step's
 * x and z1 while its gather blocks write the next step's, so those two and the labels are
 * double-buffered: step s of an epoch uses half (steps - 1 - s) % 2, which makes the last
 * step's half the trainer's own x, y and z1 (what --check reads after an epoch, and what
 * the evaluation pass overwrites). The halves are chosen when the step is enqueued, so
 * every step of an epoch is its own launches: the trainer runs as one whole-epoch graph.
 * Positions come from the step's number, not from the device cursor. */
#ifndef CH07_STEPS_THREE_CUH
#define CH07_STEPS_THREE_CUH

#include "gemm_tune.cuh"
#include "kernels_backward.cuh"
#include "trainer.cuh"

/* The family's own buffers: the second half of the double buffers (the first is the
 * trainer's x, y, z1), the backward kernel's tickets, and its plan. */
typedef struct {
    float *x[2], *z1[2];
    int *y[2];
    int *tickets;
    MlpBwdPlan plan;
} ThreeBuffers;

static ThreeBuffers *three_buffers(const Trainer *t) { return (ThreeBuffers *)t->own; }

static int three_half(const Trainer *t, int s) { return (steps_per_epoch(t) - 1 - s) & 1; }

/* Where a gather into half h goes: its x and y, and its z1 cleared. */
static MlpBatch three_half_batch(const Trainer *t, int h)
{
    ThreeBuffers *b = three_buffers(t);
    MlpBatch d = {b->x[h], NULL, b->y[h], b->z1[h], (size_t)t->batch * t->hidden};
    return d;
}

/* ... and the gather of step s's batch. */
static MlpBatch three_batch(const Trainer *t, int s) { return three_half_batch(t, three_half(t, s)); }

/* The backward launch of a batch of `rows` in half h, with plan p, gathering the `next`
 * batch of next_rows rows (0: none) from position next_start into *dst. */
static void three_backward(Trainer *t, const MlpBwdPlan *p, int h, int rows, float lr, float mu, int next_start,
                           int next_rows, const MlpBatch *dst)
{
    ThreeBuffers *b = three_buffers(t);
    MlpSource src = train_source(t);
    launch_backward_sgd(p, b->x[h], b->z1[h], t->dz2, t->params, t->vel, &t->l, rows, lr, mu, b->tickets, &src,
                        next_start, next_rows, dst);
}

/* ------------------------------------------------------------------ the plan, timed */

typedef struct {
    Trainer *t;
    MlpBwdPlan plan;
} ThreeTuneCall;

static void three_tune_call(const void *ctx)
{
    const ThreeTuneCall *c = (const ThreeTuneCall *)ctx;
    MlpBatch dst = three_half_batch(c->t, 1);
    three_backward(c->t, &c->plan, 0, c->t->batch, 0.0f, 1.0f, 0, c->t->batch, &dst);
}

/* The backward kernel's tile and range length, as gemm_tune.cuh chooses the products'
 * plans: every tile with every range length from 16 rows up to the batch (at most 128),
 * timed as 20 launches in a graph (lr 0 and momentum 1: the parameters stay as they are),
 * the fastest kept. --check keeps the default plan. */
static MlpBwdPlan three_tune(Trainer *t)
{
    MlpBwdPlan best = mlp_bwd_default_plan(t->batch), fallback = best;
    if (gemm_tune_off) return best;
    double best_us = 0.0, default_us = 0.0;
    int most = mlp_bwd_round_k(t->batch) < MLP_BWD_MAX_K ? mlp_bwd_round_k(t->batch) : MLP_BWD_MAX_K;
    for (int tile = 0; tile < MLP_BWD_NTILES; tile++) {
        int last_splits = 0;
        for (int k = MLP_BWD_K_STEP; k <= most; k += MLP_BWD_K_STEP) {
            ThreeTuneCall call = {t, mlp_bwd_plan(tile, t->batch, k)};
            if (call.plan.splits == last_splits || !mlp_bwd_fits(&call.plan)) continue;
            last_splits = call.plan.splits;
            call.plan = mlp_bwd_plan(tile, t->batch, (t->batch + last_splits - 1) / last_splits);
            double us = graph_us_per_launch(three_tune_call, &call);
            if (call.plan.tile == fallback.tile && call.plan.k_rows == fallback.k_rows) default_us = us;
            if (best_us == 0.0 || us < best_us) best_us = us, best = call.plan;
        }
    }
    printf("  %s: backward of %d rows in a graph: %s tiles, %d range%s of %d rows, %.2f us (the default %s x %d: "
           "%.2f us)\n", t->impl->name, t->batch, MLP_BWD_TILE_NAMES[best.tile], best.splits, best.splits == 1 ? "" : "s",
           best.k_rows, best_us, MLP_BWD_TILE_NAMES[fallback.tile], fallback.k_rows, default_us);
    return best;
}

/* ------------------------------------------------------------------ the family */

static void three_create(Trainer *t)
{
    ThreeBuffers *b = (ThreeBuffers *)xmalloc(sizeof *b);
    size_t bx = (size_t)t->batch * IDX_PIXELS, bh = (size_t)t->batch * t->hidden;
    b->x[0] = t->x, b->y[0] = t->y, b->z1[0] = t->z1;
    b->x[1] = (float *)dalloc(bx * sizeof(float));
    b->y[1] = (int *)dalloc((size_t)t->batch * sizeof(int));
    b->z1[1] = (float *)dalloc(bh * sizeof(float));
    size_t tickets = (size_t)(mlp_bwd_tile_count(t->hidden) + mlp_bwd_column_count(t->hidden)) * sizeof(int);
    b->tickets = (int *)dalloc(tickets);
    CUDA_CHECK(cudaMemset(b->tickets, 0, tickets));
    t->own = b;
    /* the timing runs on zeros (the parameters are uploaded later, the velocity cleared) */
    for (int h = 0; h < 2; h++) {
        CUDA_CHECK(cudaMemset(b->x[h], 0, bx * sizeof(float)));
        CUDA_CHECK(cudaMemset(b->z1[h], 0, bh * sizeof(float)));
    }
    CUDA_CHECK(cudaMemset(t->dz2, 0, (size_t)t->batch * MLP_CLASSES * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->params, 0, t->l.total * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->vel, 0, t->l.total * sizeof(float)));
    b->plan = three_tune(t);
}

static void three_destroy(Trainer *t)
{
    ThreeBuffers *b = three_buffers(t);
    CUDA_CHECK(cudaFree(b->x[1]));
    CUDA_CHECK(cudaFree(b->y[1]));
    CUDA_CHECK(cudaFree(b->z1[1]));
    CUDA_CHECK(cudaFree(b->tickets));
    free(b);
    t->own = NULL;
}

/* Before an epoch's first step: its batch into its half, that half's z1 cleared. */
static void three_begin_epoch(Trainer *t)
{
    MlpSource src = train_source(t);
    MlpBatch dst = three_batch(t, 0);
    launch_gather(&src, 0, batch_of_step(t, 0), &dst);
}

static void three_step(Trainer *t, int s, int batch, float lr, float mu)
{
    const MlpLayout *l = &t->l;
    ThreeBuffers *b = three_buffers(t);
    int h = three_half(t, s), H = t->hidden, last = s + 1 >= steps_per_epoch(t);
    float *b1 = t->params + l->b1, *W2 = t->params + l->w2, *b2 = t->params + l->b2;
    gemm(t, batch, H, IDX_PIXELS, 1.0f, b->x[h], t->params + l->w1, 1.0f, b->z1[h]); /* z1 cleared by the gather */
    launch_output_layer<true>(b->z1[h], b1, W2, b2, b->y[h], batch, H, t->dz2, t->vel + l->b2, t->step_loss + s, NULL,
                              t->batch, NULL);
    MlpBatch next = three_batch(t, s + 1);
    three_backward(t, &b->plan, h, batch, lr, mu, (s + 1) * t->batch, last ? 0 : batch_of_step(t, s + 1), &next);
}

/* The three launches one by one for the bench (half 0, a whole batch, lr 0 and momentum 1,
 * the loss into slot 0; the backward gathers a batch into half 1). */
static void three_stage(Trainer *t, int stage)
{
    const MlpLayout *l = &t->l;
    ThreeBuffers *b = three_buffers(t);
    int B = t->batch, H = t->hidden;
    MlpBatch next = three_half_batch(t, 1);
    switch (stage) {
    case 0: gemm(t, B, H, IDX_PIXELS, 1.0f, b->x[0], t->params + l->w1, 1.0f, b->z1[0]); break;
    case 1: launch_output_layer<true>(b->z1[0], t->params + l->b1, t->params + l->w2, t->params + l->b2, b->y[0], B, H,
                                      t->dz2, t->vel + l->b2, t->step_loss, NULL, B, NULL); break;
    default: three_backward(t, &b->plan, 0, B, 0.0f, 1.0f, 0, B, &next); break;
    }
}

static const char *const THREE_STAGE_NAMES[] = {"gemm_forward", "output_layer", "backward_and_update"};
static const StepStages THREE_STAGES = {(int)(sizeof THREE_STAGE_NAMES / sizeof THREE_STAGE_NAMES[0]),
                                        THREE_STAGE_NAMES, three_stage};

static const StepFamily THREE_STEPS = {
    .fused = 1, .capturable = 1, .own_backward = 1,
    .create = three_create, .destroy = three_destroy,
    .begin_epoch = three_begin_epoch, .step = three_step, .evaluate = evaluate_fp32,
    .tolerances = NULL, .stages = &THREE_STAGES,
};

#endif
