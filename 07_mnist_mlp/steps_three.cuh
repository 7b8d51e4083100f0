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
 * the evaluation pass overwrites). So are b1, W2 and b2 with their velocity (the kernel
 * reads them in every block while it steps them): step s reads copy (steps - s) % 2 and
 * writes the other, so that the last step writes copy 0, the trainer's own parameters;
 * when an epoch has an odd number of steps its first reads copy 1, which the epoch begins
 * by filling from copy 0. The halves are chosen when the step is enqueued, so every step
 * of an epoch is its own launches: the trainer runs as one whole-epoch graph. Positions
 * come from the step's number, not from the device cursor.
 *
 * The one kernel recomputes dz1 in every row of tiles of dW1 (13 to 25 times), which the
 * launches it replaces did once. Where that costs more than the two launches it saves (at
 * batch 256 on an H100, README part two), the backward runs as the fused step's three
 * launches instead (hidden backward, chapter 05's dW1 product, update and gather), with x
 * transposed into xt by the gathers and every parameter stepped in place (copy 0 only).
 * Which of the two, the trainer decides by timing both inside a graph when it is made. */
#ifndef CH07_STEPS_THREE_CUH
#define CH07_STEPS_THREE_CUH

#include "gemm_tune.cuh"
#include "kernels_backward.cuh"
#include "trainer.cuh"

/* The family's own buffers: the second half of the double buffers (the first is the
 * trainer's x, xt, y, z1 and parameters from b1 on), the backward kernel's tickets and plan,
 * and for the backward as three launches the positions their gather reads. */
typedef struct {
    float *x[2], *xt[2], *z1[2];
    int *y[2];
    MlpSmall small[2];
    size_t small_count; /* floats of b1, W2, b2 (padding included) */
    int *tickets;
    MlpBwdPlan plan;
    int launches;       /* 1: the backward kernel; 3: the fused step's three launches */
    int *starts;        /* starts[i] = i * batch, i = 0 .. steps: where step i's batch begins */
} ThreeBuffers;

static ThreeBuffers *three_buffers(const Trainer *t) { return (ThreeBuffers *)t->own; }

static int three_half(const Trainer *t, int s) { return (steps_per_epoch(t) - 1 - s) & 1; }

/* The copy of b1, W2, b2 that step s reads (the backward kernel writes the other). */
static int three_small_in(const Trainer *t, int s)
{
    return three_buffers(t)->launches == 1 ? (steps_per_epoch(t) - s) & 1 : 0;
}

/* Where a gather into half h goes: its x (and xt, for the three launches) and y, and its
 * z1 cleared. */
static MlpBatch three_half_batch(const Trainer *t, int h)
{
    ThreeBuffers *b = three_buffers(t);
    MlpBatch d = {b->x[h], b->launches == 1 ? NULL : b->xt[h], b->y[h], b->z1[h], (size_t)t->batch * t->hidden};
    return d;
}

/* ... and the gather of step s's batch. */
static MlpBatch three_batch(const Trainer *t, int s) { return three_half_batch(t, three_half(t, s)); }

/* The output layer of a batch of `rows` in half h, reading copy c of b1, W2, b2 (the
 * b2 gradient into its velocity), its loss into slot `slot`. */
static void three_output(Trainer *t, int h, int c, int rows, int slot)
{
    const MlpLayout *l = &t->l;
    ThreeBuffers *b = three_buffers(t);
    const MlpSmall *in = &b->small[c];
    size_t w2 = l->w2 - l->b1, b2 = l->b2 - l->b1;
    launch_output_layer<true>(b->z1[h], in->p, in->p + w2, in->p + b2, b->y[h], rows, t->hidden, t->dz2, in->v + b2,
                              t->step_loss + slot, NULL, t->batch, NULL);
}

/* The backward kernel on a batch of `rows` in half h, reading copy c of b1, W2, b2 and
 * writing the other, with plan p; it gathers batch `next` (if there is one) into *dst. */
static void three_backward_kernel(Trainer *t, const MlpBwdPlan *p, int h, int c, int rows, float lr, float mu,
                                  int next, const MlpBatch *dst)
{
    const MlpLayout *l = &t->l;
    ThreeBuffers *b = three_buffers(t);
    MlpBwdArgs a = {};
    a.x = b->x[h], a.z1 = b->z1[h], a.dz2 = t->dz2;
    a.w1 = t->params + l->w1, a.v1 = t->vel + l->w1;
    a.in = b->small[c], a.out = b->small[c ^ 1];
    a.hidden = t->hidden, a.w2 = (int)(l->w2 - l->b1), a.b2 = (int)(l->b2 - l->b1);
    a.rows = rows, a.lr = lr, a.mu = mu, a.tickets = b->tickets;
    a.src = train_source(t), a.next = *dst;
    a.next_start = next * t->batch, a.next_rows = next < steps_per_epoch(t) ? batch_of_step(t, next) : 0;
    launch_backward_sgd(p, a);
}

/* The same as the fused step's three launches (copy 0 of the parameters, stepped in place;
 * the update's gather reads batch `next`'s position from starts, none past the last). */
static void three_backward_launches(Trainer *t, int h, int rows, float lr, float mu, int next, const MlpBatch *dst)
{
    const MlpLayout *l = &t->l;
    ThreeBuffers *b = three_buffers(t);
    float *P = t->params, *V = t->vel;
    launch_hidden_backward(b->z1[h], P + l->b1, t->dz2, P + l->w2, rows, t->hidden, t->dz1, V + l->w2, V + l->b1, NULL);
    gemm(t, IDX_PIXELS, t->hidden, rows, 1.0f, b->xt[h], t->dz1, 1.0f, V + l->w1);
    MlpSource src = train_source(t);
    launch_update(P, V, l->total, lr, mu, &src, b->starts + next, t->n_train, t->batch, dst);
}

static void three_backward(Trainer *t, int h, int c, int rows, float lr, float mu, int next, const MlpBatch *dst)
{
    ThreeBuffers *b = three_buffers(t);
    if (b->launches == 1) three_backward_kernel(t, &b->plan, h, c, rows, lr, mu, next, dst);
    else three_backward_launches(t, h, rows, lr, mu, next, dst);
}

/* ------------------------------------------------------------------ the choices, timed */

typedef struct {
    Trainer *t;
    MlpBwdPlan plan;
} ThreeTuneCall;

/* One backward of a whole batch in half 0 (lr 0 and momentum 1: the parameters stay as
 * they are), gathering batch 1 into half 1. */
static void three_kernel_call(const void *ctx)
{
    const ThreeTuneCall *c = (const ThreeTuneCall *)ctx;
    MlpBatch dst = three_half_batch(c->t, 1);
    three_backward_kernel(c->t, &c->plan, 0, 0, c->t->batch, 0.0f, 1.0f, 1, &dst);
}

static void three_launches_call(const void *ctx)
{
    const ThreeTuneCall *c = (const ThreeTuneCall *)ctx;
    MlpBatch dst = three_half_batch(c->t, 1);
    three_backward_launches(c->t, 0, c->t->batch, 0.0f, 1.0f, 1, &dst);
}

/* The backward kernel's tile and range length, as gemm_tune.cuh chooses the products'
 * plans: every tile with every range length from 16 rows up to the batch (at most 128),
 * timed as 20 launches in a graph, the fastest kept (its time into *us). */
static MlpBwdPlan three_tune_kernel(Trainer *t, double *us_out)
{
    MlpBwdPlan best = mlp_bwd_default_plan(t->batch), fallback = best;
    double best_us = 0.0, default_us = 0.0;
    int most = mlp_bwd_round_k(t->batch) < MLP_BWD_MAX_K ? mlp_bwd_round_k(t->batch) : MLP_BWD_MAX_K;
    for (int tile = 0; tile < MLP_BWD_NTILES; tile++) {
        int last_splits = 0;
        for (int k = MLP_BWD_K_STEP; k <= most; k += MLP_BWD_K_STEP) {
            ThreeTuneCall call = {t, mlp_bwd_plan(tile, t->batch, k)};
            if (call.plan.splits == last_splits || !mlp_bwd_fits(&call.plan)) continue;
            last_splits = call.plan.splits;
            call.plan = mlp_bwd_plan(tile, t->batch, (t->batch + last_splits - 1) / last_splits);
            double us = graph_us_per_launch(three_kernel_call, &call);
            if (call.plan.tile == fallback.tile && call.plan.k_rows == fallback.k_rows) default_us = us;
            if (best_us == 0.0 || us < best_us) best_us = us, best = call.plan;
        }
    }
    printf("  %s: backward of %d rows in a graph: one kernel, %s tiles, %d range%s of %d rows, %.2f us (the default "
           "%s x %d: %.2f us)\n", t->impl->name, t->batch, MLP_BWD_TILE_NAMES[best.tile], best.splits,
           best.splits == 1 ? "" : "s", best.k_rows, best_us, MLP_BWD_TILE_NAMES[fallback.tile], fallback.k_rows,
           default_us);
    *us_out = best_us;
    return best;
}

/* The backward kernel's plan, and whether the backward runs as it or as three launches:
 * both timed inside a graph, the faster kept. Without timing (--check): the kernel up to
 * batch 128, the launches above (what the timing chose on an H100 at 32 and 256), so
 * that the check's shapes take both. The dW1 product of the three launches gets its plan
 * from gemm_tune.cuh here, as the fused step's does in trainer.cuh. */
static void three_choose(Trainer *t)
{
    ThreeBuffers *b = three_buffers(t);
    t->tuned[1] = gemm_tune(t->impl->name, IDX_PIXELS, t->hidden, t->batch, t->xt, t->dz1);
    t->n_tuned = 2;
    if (gemm_tune_off) {
        b->plan = mlp_bwd_default_plan(t->batch);
        b->launches = t->batch <= 128 ? 1 : 3;
        return;
    }
    double kernel_us, launches_us;
    b->plan = three_tune_kernel(t, &kernel_us);
    b->launches = 3;
    ThreeTuneCall call = {t, b->plan};
    launches_us = graph_us_per_launch(three_launches_call, &call);
    b->launches = kernel_us <= launches_us ? 1 : 3;
    printf("  %s: backward of %d rows in a graph: one kernel %.2f us, three launches %.2f us: %s\n", t->impl->name,
           t->batch, kernel_us, launches_us, b->launches == 1 ? "one kernel" : "three launches");
}

/* ------------------------------------------------------------------ the family */

static void three_create(Trainer *t)
{
    ThreeBuffers *b = (ThreeBuffers *)xmalloc(sizeof *b);
    size_t bx = (size_t)t->batch * IDX_PIXELS, bh = (size_t)t->batch * t->hidden;
    int steps = steps_per_epoch(t);
    b->x[0] = t->x, b->xt[0] = t->xt, b->y[0] = t->y, b->z1[0] = t->z1;
    b->x[1] = (float *)dalloc(bx * sizeof(float));
    b->xt[1] = (float *)dalloc(bx * sizeof(float));
    b->y[1] = (int *)dalloc((size_t)t->batch * sizeof(int));
    b->z1[1] = (float *)dalloc(bh * sizeof(float));
    b->small_count = t->l.total - t->l.b1;
    b->small[0].p = t->params + t->l.b1, b->small[0].v = t->vel + t->l.b1;
    b->small[1].p = (float *)dalloc(b->small_count * sizeof(float));
    b->small[1].v = (float *)dalloc(b->small_count * sizeof(float));
    size_t tickets = (size_t)mlp_bwd_tile_count(t->hidden) * sizeof(int);
    b->tickets = (int *)dalloc(tickets);
    CUDA_CHECK(cudaMemset(b->tickets, 0, tickets));
    int *starts = (int *)xmalloc((size_t)(steps + 1) * sizeof(int));
    for (int i = 0; i <= steps; i++) starts[i] = i * t->batch;
    b->starts = (int *)dalloc((size_t)(steps + 1) * sizeof(int));
    CUDA_CHECK(cudaMemcpy(b->starts, starts, (size_t)(steps + 1) * sizeof(int), cudaMemcpyHostToDevice));
    free(starts);
    b->launches = 1;
    t->own = b;
    /* the timings run on zeros (the parameters are uploaded later, the velocity cleared;
       copy 0 of b1, W2, b2 lies in them) */
    for (int h = 0; h < 2; h++) {
        CUDA_CHECK(cudaMemset(b->x[h], 0, bx * sizeof(float)));
        CUDA_CHECK(cudaMemset(b->xt[h], 0, bx * sizeof(float)));
        CUDA_CHECK(cudaMemset(b->z1[h], 0, bh * sizeof(float)));
    }
    CUDA_CHECK(cudaMemset(b->small[1].p, 0, b->small_count * sizeof(float)));
    CUDA_CHECK(cudaMemset(b->small[1].v, 0, b->small_count * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->dz1, 0, bh * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->dz2, 0, (size_t)t->batch * MLP_CLASSES * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->params, 0, t->l.total * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->vel, 0, t->l.total * sizeof(float)));
    three_choose(t);
}

static void three_destroy(Trainer *t)
{
    ThreeBuffers *b = three_buffers(t);
    void *dev[] = {b->x[1], b->xt[1], b->y[1], b->z1[1], b->small[1].p, b->small[1].v, b->tickets, b->starts};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) CUDA_CHECK(cudaFree(dev[i]));
    free(b);
    t->own = NULL;
}

/* Before an epoch's first step: its batch into its half, that half's z1 cleared; and when
 * the first step reads copy 1 of b1, W2, b2, copy 1 made from the trainer's own. */
static void three_begin_epoch(Trainer *t)
{
    ThreeBuffers *b = three_buffers(t);
    MlpSource src = train_source(t);
    MlpBatch dst = three_batch(t, 0);
    launch_gather(&src, 0, batch_of_step(t, 0), &dst);
    if (three_small_in(t, 0) == 1) {
        size_t bytes = b->small_count * sizeof(float);
        CUDA_CHECK(cudaMemcpyAsync(b->small[1].p, b->small[0].p, bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread));
        CUDA_CHECK(cudaMemcpyAsync(b->small[1].v, b->small[0].v, bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread));
    }
}

static void three_step(Trainer *t, int s, int batch, float lr, float mu)
{
    ThreeBuffers *b = three_buffers(t);
    int h = three_half(t, s), c = three_small_in(t, s);
    gemm(t, batch, t->hidden, IDX_PIXELS, 1.0f, b->x[h], t->params + t->l.w1, 1.0f, b->z1[h]); /* z1 cleared by the gather */
    three_output(t, h, c, batch, s);
    MlpBatch next = three_batch(t, s + 1);
    three_backward(t, h, c, batch, lr, mu, s + 1, &next);
}

/* The three launches one by one for the bench (half 0, copy 0 of b1, W2, b2, a whole batch,
 * lr 0 and momentum 1, the loss into slot 0; the backward gathers batch 1 into half 1). */
static void three_stage(Trainer *t, int stage)
{
    ThreeBuffers *b = three_buffers(t);
    int B = t->batch;
    MlpBatch next = three_half_batch(t, 1);
    switch (stage) {
    case 0: gemm(t, B, t->hidden, IDX_PIXELS, 1.0f, b->x[0], t->params + t->l.w1, 1.0f, b->z1[0]); break;
    case 1: three_output(t, 0, 0, B, 0); break;
    default: three_backward(t, 0, 0, B, 0.0f, 1.0f, 1, &next); break;
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
