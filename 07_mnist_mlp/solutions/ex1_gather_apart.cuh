/* Exercise 1 (warm-up): the next batch's gather as a launch of its own.
 *
 * Asked: the fused step's last launch does two jobs in one grid, the update of every parameter
 * and the gather of the next batch (mlp_update_and_gather). Give the gather its own launch after
 * the update (six launches a step), run it as a whole-epoch graph and compare its epoch time with
 * epoch_graph's. Predict first, from what the lesson measured inside the graph: what leaving the
 * gather out of the update launch saved a step, and what a launch of its own costs there.
 *
 * Answer: the step below is the fused step with `next` NULL in the update (its gather blocks are
 * not launched) and a gather launch after it. The gather's start is the step's position by value,
 * (s + 1) * batch, which a whole-epoch graph can freeze, since every step is captured with its own
 * arguments; a one-step graph could not (this row asks for the epoch graph). Its chain of
 * dependent loads is one shorter (the start is an argument: order[start + b], then the pixels, with
 * no load of the cursor first), but it runs after the update in the same chain: nothing of it hides
 * behind the update's traffic any more, and it is a launch with a ramp and a drain of its own. So
 * the step gets longer by about what the gather costs alone, less what it cost riding along.
 * Riding in the update's grid is the cheaper place: there its latency overlaps the update's
 * streaming of 13 MB. */
#ifndef CH07_EX1_GATHER_APART_CUH
#define CH07_EX1_GATHER_APART_CUH

#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

/* The fused step of five launches, then the gather of batch s + 1 (none after the last). */
static void ex1_step(Trainer *t, int s, int batch, float lr, float mu)
{
    step_fused_core(t, batch, lr, mu, NULL); /* the update alone: next NULL */
    if (s + 1 < steps_per_epoch(t)) {
        MlpSource src = train_source(t);
        MlpBatch dst = fused_batch(t);
        launch_gather(&src, (s + 1) * t->batch, batch_of_step(t, s + 1), &dst);
    }
}

/* The six launches one by one for the bench (fused_stage's first four, then the update alone
 * and the gather of batch 1 alone), to set the gather's own time beside update_and_gather's. */
static void ex1_stage(Trainer *t, int stage)
{
    if (stage < 4) {
        fused_stage(t, stage);
        return;
    }
    if (stage == 4) {
        launch_update(t->params, t->vel, t->l.total, 0.0f, 1.0f, NULL, t->cursor, t->n_train,
                      t->batch, NULL);
        return;
    }
    if (batch_of_step(t, 1) <= 0) return; /* an epoch of one step: no second batch */
    MlpSource src = train_source(t);
    MlpBatch dst = fused_batch(t);
    launch_gather(&src, t->batch, batch_of_step(t, 1), &dst);
}

static const char *const EX1_STAGE_NAMES[] = {"gemm_forward", "output_layer", "hidden_backward",
                                              "gemm_dW1",     "update",       "gather"};
static const StepStages EX1_STAGES = {6, EX1_STAGE_NAMES, ex1_stage, NULL};

static const StepFamily EX1_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = NULL,
    .destroy = NULL,
    .begin_epoch = gather_first_batch,
    .step = ex1_step,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = &EX1_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
