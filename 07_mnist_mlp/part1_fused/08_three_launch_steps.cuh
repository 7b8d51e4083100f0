/* Chapter 07: the family of the optimized and bf16 trainers' step
 * (part1_fused/08_three_launches.cuh has the step itself: its double buffers, its forward product
 * and output layer, and its backward as one kernel or as three launches with their branch). Here:
 * the timed choice between those two backwards, the family's buffers made and freed, the start of
 * an epoch, a step, and the launches one by one for the bench. */
#ifndef CH07_STEPS_THREE_CUH
#define CH07_STEPS_THREE_CUH

#include "07_mnist_mlp/part1_fused/08_three_launches.cuh"

/* ------------------------------------------------------------------ the choices, timed */

typedef struct {
    Trainer *t;
    MlpBwdPlan plan;
} ThreeTuneCall;

/* One backward of a whole batch in half 0 (lr 0 and momentum 1: the parameters stay as
 * they are), gathering batch 1 into half 1. */
template <typename S> static void three_kernel_call(const void *ctx)
{
    const ThreeTuneCall *c = (const ThreeTuneCall *)ctx;
    MlpBatchOf<S> dst = three_half_batch<S>(c->t, 1);
    three_backward_kernel<S>(c->t, &c->plan, 0, 0, c->t->batch, 0.0f, 1.0f, 1, &dst);
}

template <typename S> static void three_launches_call(const void *ctx)
{
    const ThreeTuneCall *c = (const ThreeTuneCall *)ctx;
    MlpBatchOf<S> dst = three_half_batch<S>(c->t, 1);
    three_backward_launches<S>(c->t, 0, c->t->batch, 0.0f, 1.0f, 1, &dst);
}

/* The backward kernel's tile and range length, as part1_fused/04_gemm_tune.cuh chooses the
 * products' plans: every tile with every range length from 16 rows up to the batch (at most 128),
 * timed as 20 launches in a graph, the fastest kept (its time into *us). */
template <typename S> static MlpBwdPlan three_tune_kernel(Trainer *t, double *us_out)
{
    MlpBwdPlan best = mlp_bwd_default_plan(t->batch), fallback = best;
    double best_us = 0.0, default_us = 0.0;
    int most =
        mlp_bwd_round_k(t->batch) < MLP_BWD_MAX_K ? mlp_bwd_round_k(t->batch) : MLP_BWD_MAX_K;
    for (int tile = 0; tile < MLP_BWD_NTILES; tile++) {
        int last_splits = 0;
        for (int k = MLP_BWD_K_STEP; k <= most; k += MLP_BWD_K_STEP) {
            ThreeTuneCall call = {t, mlp_bwd_plan(tile, t->batch, k)};
            if (call.plan.splits == last_splits || !mlp_bwd_fits<S>(&call.plan)) continue;
            last_splits = call.plan.splits;
            call.plan = mlp_bwd_plan(tile, t->batch, (t->batch + last_splits - 1) / last_splits);
            double us = graph_us_per_launch(three_kernel_call<S>, &call);
            if (call.plan.tile == fallback.tile && call.plan.k_rows == fallback.k_rows)
                default_us = us;
            if (best_us == 0.0 || us < best_us) best_us = us, best = call.plan;
        }
    }
    printf(
        "  %s: backward of %d rows in a graph: one kernel, %s tiles, %d range%s of %d rows, %.2f "
        "us (the default "
        "%s x %d: %.2f us)\n",
        t->impl->name, t->batch, MLP_BWD_TILE_NAMES[best.tile], best.splits,
        best.splits == 1 ? "" : "s", best.k_rows, best_us, MLP_BWD_TILE_NAMES[fallback.tile],
        fallback.k_rows, default_us);
    *us_out = best_us;
    return best;
}

/* The backward kernel's plan, and whether the backward runs as it or as three launches: both timed
 * inside a graph, the faster kept. Without timing (--check): the kernel up to batch 128, the
 * launches above, so that the check's shapes take both. The dW1 product of the three launches has
 * its plan already: driver/trainer.cuh's tune_products for fp32, tc_init for bf16. */
template <typename S> static void three_choose(Trainer *t)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    if (gemm_tune_off) {
        b->plan = mlp_bwd_default_plan(t->batch);
        b->launches = t->batch <= 128 ? 1 : 3;
        return;
    }
    double kernel_us, launches_us;
    b->plan = three_tune_kernel<S>(t, &kernel_us);
    b->launches = 3;
    ThreeTuneCall call = {t, b->plan};
    launches_us = graph_us_per_launch(three_launches_call<S>, &call);
    b->launches = kernel_us <= launches_us ? 1 : 3;
    printf("  %s: backward of %d rows in a graph: one kernel %.2f us, three launches %.2f us: %s\n",
           t->impl->name, t->batch, kernel_us, launches_us,
           b->launches == 1 ? "one kernel" : "three launches");
}

/* ------------------------------------------------------------------ the family */

template <typename S> static void three_create(Trainer *t)
{
    typedef typename S::T T;
    ThreeBuffersOf<S> *b = (ThreeBuffersOf<S> *)xmalloc(sizeof *b);
    memset(b, 0, sizeof *b);
    size_t bx = (size_t)t->batch * IDX_PIXELS, bh = (size_t)t->batch * t->hidden;
    int steps = steps_per_epoch(t);
    t->own = b;
    if constexpr (three_bf16<S>()) {
        tc_init<S>(t, &b->tc);
        b->x[0] = b->tc.x;
    } else {
        b->x[0] = t->x, b->xt[0] = t->xt;
        b->xt[1] = (float *)dalloc(bx * sizeof(float));
    }
    b->y[0] = t->y, b->z1[0] = t->z1;
    b->x[1] = (T *)dalloc(bx * sizeof(T));
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
    CUDA_CHECK(
        cudaMemcpy(b->starts, starts, (size_t)(steps + 1) * sizeof(int), cudaMemcpyHostToDevice));
    free(starts);
    b->launches = 1;
    if constexpr (!three_bf16<S>()) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&b->side, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&b->forked, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&b->gathered, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&b->small_done, cudaEventDisableTiming));
    }
    /* the timings run on zeros (the parameters are uploaded later, the velocity cleared;
       copy 0 of b1, W2, b2 lies in them) */
    for (int h = 0; h < 2; h++) {
        CUDA_CHECK(cudaMemset(b->x[h], 0, bx * sizeof(T)));
        if (b->xt[h]) CUDA_CHECK(cudaMemset(b->xt[h], 0, bx * sizeof(float)));
        CUDA_CHECK(cudaMemset(b->z1[h], 0, bh * sizeof(float)));
    }
    CUDA_CHECK(cudaMemset(b->small[1].p, 0, b->small_count * sizeof(float)));
    CUDA_CHECK(cudaMemset(b->small[1].v, 0, b->small_count * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->dz1, 0, bh * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->dz2, 0, (size_t)t->batch * MLP_CLASSES * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->params, 0, t->l.total * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->vel, 0, t->l.total * sizeof(float)));
    three_choose<S>(t);
}

template <typename S> static void three_destroy(Trainer *t)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    void *dev[] = {b->x[1],       b->xt[1],      b->y[1],    b->z1[1],
                   b->small[1].p, b->small[1].v, b->tickets, b->starts};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) CUDA_CHECK(cudaFree(dev[i]));
    if constexpr (three_bf16<S>())
        tc_release<S>(t, &b->tc);
    else {
        CUDA_CHECK(cudaEventDestroy(b->forked));
        CUDA_CHECK(cudaEventDestroy(b->gathered));
        CUDA_CHECK(cudaEventDestroy(b->small_done));
        CUDA_CHECK(cudaStreamDestroy(b->side));
    }
    free(b);
    t->own = NULL;
}

/* Before an epoch's first step: its batch into its half, that half's z1 cleared; when the
 * first step reads copy 1 of b1, W2, b2, copy 1 made from the trainer's own; for bf16, W1t
 * made from W1 (the parameters may have been uploaded since the last step wrote it). */
template <typename S> static void three_begin_epoch(Trainer *t)
{
    if (three_runs_tc<S>(t)) {
        tc_begin_epoch<S>(t);
        return;
    }
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    MlpSource src = train_source(t);
    MlpBatchOf<S> dst = three_batch<S>(t, 0);
    launch_gather(&src, 0, batch_of_step(t, 0), &dst);
    if (three_small_in<S>(t, 0) == 1) {
        size_t bytes = b->small_count * sizeof(float);
        CUDA_CHECK(cudaMemcpyAsync(b->small[1].p, b->small[0].p, bytes, cudaMemcpyDeviceToDevice,
                                   cudaStreamPerThread));
        CUDA_CHECK(cudaMemcpyAsync(b->small[1].v, b->small[0].v, bytes, cudaMemcpyDeviceToDevice,
                                   cudaStreamPerThread));
    }
    if constexpr (three_bf16<S>()) launch_make_w1t<S>(t->params + t->l.w1, &t->l, b->tc.w1t);
}

template <typename S> static void three_step(Trainer *t, int s, int batch, float lr, float mu)
{
    if (three_runs_tc<S>(t)) {
        tc_step<S>(t, s, batch, lr, mu);
        return;
    }
    int h = three_half(t, s), c = three_small_in<S>(t, s);
    bool beside = three_beside<S>(t, s + 1);
    three_forward<S>(t, h, batch);
    three_output<S>(t, h, c, batch, s, beside);
    MlpBatchOf<S> next = three_batch<S>(t, s + 1);
    three_backward<S>(t, h, c, batch, lr, mu, s + 1, &next, beside);
}

/* The three launches one by one for the bench (half 0, copy 0 of b1, W2, b2, a whole batch,
 * lr 0 and momentum 1, the loss into slot 0; the backward gathers batch 1 into half 1). */
template <typename S> static void three_stage(Trainer *t, int stage)
{
    MlpBatchOf<S> next = three_half_batch<S>(t, 1);
    switch (stage) {
        case 0: three_forward<S>(t, 0, t->batch); break;
        case 1: three_output<S>(t, 0, 0, t->batch, 0); break;
        default: three_backward<S>(t, 0, 0, t->batch, 0.0f, 1.0f, 1, &next, false); break;
    }
}

static const char *const THREE_STAGE_NAMES[] = {"gemm_forward", "output_layer",
                                                "backward_and_update"};
#define THREE_LAUNCHES (int)(sizeof THREE_STAGE_NAMES / sizeof THREE_STAGE_NAMES[0])
static const StepStages THREE_STAGES = {THREE_LAUNCHES, THREE_STAGE_NAMES, three_stage<MlpFp32>,
                                        NULL};
static const StepStages THREE_BF16_STAGES = {THREE_LAUNCHES, THREE_STAGE_NAMES,
                                             three_stage<MlpBf16>, NULL};

static const StepFamily THREE_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = three_create<MlpFp32>,
    .destroy = three_destroy<MlpFp32>,
    .begin_epoch = three_begin_epoch<MlpFp32>,
    .step = three_step<MlpFp32>,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = &THREE_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

/* bf16: checked as part2_tensor_cores/01_tc_steps.cuh's step is (TC_TOLERANCES: against CPU steps
 * on the same rounded operands), and evaluated with its forward product. */
static const StepFamily THREE_BF16_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = three_create<MlpBf16>,
    .destroy = three_destroy<MlpBf16>,
    .begin_epoch = three_begin_epoch<MlpBf16>,
    .step = three_step<MlpBf16>,
    .evaluate = tc_evaluate<MlpBf16>,
    .tolerances = &TC_TOLERANCES,
    .stages = &THREE_BF16_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
