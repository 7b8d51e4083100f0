/* Chapter 07: the fused step of trainers fused, step_graph, optimized and cublas: five
 * launches a step (the products of the row's gemm, the fused kernels of kernels.cuh),
 * positions read from the device cursor, so that a step or a whole epoch can be captured
 * in a CUDA graph (driver/epochs.cuh does the capturing). The bench times its five launches one
 * by one. part1_fused/05_fed_steps.cuh feeds the same step from the host. */
#ifndef CH07_STEPS_FUSED_CUH
#define CH07_STEPS_FUSED_CUH

#include "07_mnist_mlp/driver/trainer.cuh"

/* The fused step: five launches, positions read from the device cursor. Its batch is
 * already in x, xt and y, with z1 cleared: gathered by the step before, or for the first
 * step of an epoch by gather_first_batch. Its last launch gathers the next batch from
 * `next` at the advanced cursor (next NULL: the caller brings the next batch itself). */
static void step_fused_core(Trainer *t, int batch, float lr, float mu, const MlpSource *next)
{
    const MlpLayout *l = &t->l;
    int H = t->hidden;
    float *W1 = t->params + l->w1, *b1 = t->params + l->b1, *W2 = t->params + l->w2,
          *b2 = t->params + l->b2;
    gemm(t, batch, H, IDX_PIXELS, 1.0f, t->x, W1, 1.0f, t->z1); /* z1 cleared by the gather */
    launch_output_layer<true>(t->z1, b1, W2, b2, t->y, batch, H, t->dz2, t->vel + l->b2,
                              t->step_loss, t->cursor, t->batch, NULL);
    launch_hidden_backward(t->z1, b1, t->dz2, W2, batch, H, t->dz1, t->vel + l->w2, t->vel + l->b1,
                           t->cursor);
    gemm(t, IDX_PIXELS, H, batch, 1.0f, t->xt, t->dz1, 1.0f, t->vel + l->w1);
    MlpBatch dst = fused_batch(t);
    launch_update(t->params, t->vel, l->total, lr, mu, next, t->cursor, t->n_train, t->batch, &dst);
}

static void gather_first_batch(Trainer *t)
{
    MlpSource src = train_source(t);
    MlpBatch dst = fused_batch(t);
    launch_gather(&src, 0, batch_of_step(t, 0), &dst);
}

/* Step s reads its position from the cursor, not from s: captured once, it serves every step. */
static void step_fused(Trainer *t, int s, int batch, float lr, float mu)
{
    (void)s;
    MlpSource next = train_source(t);
    step_fused_core(t, batch, lr, mu, &next);
}

/* The fused step's five launches timed one by one (median of --reps runs each), to see
 * where a step's time goes. lr 0 and momentum 1 leave the parameters alone; repeated runs
 * of a launch only pile up values in scratch buffers. The cursor stays at 0 (no launch
 * here advances it), so the update gathers a whole batch each time. */
static void fused_stage(Trainer *t, int stage)
{
    const MlpLayout *l = &t->l;
    int B = t->batch, H = t->hidden;
    MlpSource src = train_source(t);
    MlpBatch dst = fused_batch(t);
    switch (stage) {
        case 0: gemm(t, B, H, IDX_PIXELS, 1.0f, t->x, t->params + l->w1, 1.0f, t->z1); break;
        case 1:
            launch_output_layer<true>(t->z1, t->params + l->b1, t->params + l->w2,
                                      t->params + l->b2, t->y, B, H, t->dz2, t->vel + l->b2,
                                      t->step_loss, NULL, B, NULL);
            break;
        case 2:
            launch_hidden_backward(t->z1, t->params + l->b1, t->dz2, t->params + l->w2, B, H,
                                   t->dz1, t->vel + l->w2, t->vel + l->b1, NULL);
            break;
        case 3: gemm(t, IDX_PIXELS, H, B, 1.0f, t->xt, t->dz1, 1.0f, t->vel + l->w1); break;
        default:
            launch_update(t->params, t->vel, l->total, 0.0f, 1.0f, &src, t->cursor, t->n_train, B,
                          &dst);
            break;
    }
}

static const char *const FUSED_STAGE_NAMES[] = {"gemm_forward", "output_layer", "hidden_backward",
                                                "gemm_dW1", "update_and_gather"};
static const StepStages FUSED_STAGES = {
    (int)(sizeof FUSED_STAGE_NAMES / sizeof FUSED_STAGE_NAMES[0]), FUSED_STAGE_NAMES, fused_stage,
    NULL};

static const StepFamily FUSED_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = NULL,
    .destroy = NULL,
    .begin_epoch = gather_first_batch,
    .step = step_fused,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = &FUSED_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
