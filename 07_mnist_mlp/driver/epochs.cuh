/* Chapter 07: how a trainer runs, whatever its family: the CUDA graphs of the rows that
 * have them (one step, or a whole epoch, captured from the family's own step), an epoch
 * (shuffled order, steps, per-step losses read back once), and a training run of several
 * epochs with one progress line each. */
#ifndef CH07_EPOCHS_CUH
#define CH07_EPOCHS_CUH

#include "07_mnist_mlp/driver/trainer.cuh"

/* ------------------------------------------------------------------ graphs */

/* (begin_capture and end_capture: part1_fused/04_gemm_tune.cuh, which times the products in
 * graphs too) */

static void reset_epoch_counters(Trainer *t)
{
    CUDA_CHECK(cudaMemsetAsync(t->cursor, 0, sizeof(int), cudaStreamPerThread));
    CUDA_CHECK(cudaMemsetAsync(t->step_loss, 0, (size_t)steps_per_epoch(t) * sizeof(float),
                               cudaStreamPerThread));
}

static void family_begin_epoch(Trainer *t)
{
    if (t->impl->launch->begin_epoch) t->impl->launch->begin_epoch(t);
}

/* Before capturing: one step with lr 0 and momentum 1 (parameters unchanged) lets every
 * launcher do its one-time set-up (kernel attributes, cuBLAS workspace) outside the
 * capture; the velocity it filled is cleared again. Then the graphs are built. */
static void trainer_prepare_graphs(Trainer *t)
{
    if (t->impl->extra.graph == GRAPH_NONE) return;
    const StepFamily *f = t->impl->launch;
    if (!f->capturable) {
        fprintf(stderr,
                "internal error: trainer %s asks for a graph, but its steps cannot be captured\n",
                t->impl->name);
        exit(1);
    }
    CUDA_CHECK(cudaMemset(t->cursor, 0, sizeof(int)));
    family_begin_epoch(t);
    f->step(t, 0, batch_of_step(t, 0), 0.0f, 1.0f);
    int last = steps_per_epoch(t) - 1;
    if (last > 0) f->step(t, last, batch_of_step(t, last), 0.0f, 1.0f);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemset(t->vel, 0, t->l.total * sizeof(float)));
    if (t->impl->extra.graph == GRAPH_STEP) {
        begin_capture();
        f->step(t, 0, t->batch, t->lr, t->mu);
        t->step_exec[0] = end_capture();
        if (t->n_train % t->batch) {
            begin_capture();
            f->step(t, last, t->n_train % t->batch, t->lr, t->mu);
            t->step_exec[1] = end_capture();
        }
    } else {
        begin_capture();
        reset_epoch_counters(t);
        family_begin_epoch(t);
        for (int s = 0; s < steps_per_epoch(t); s++)
            f->step(t, s, batch_of_step(t, s), t->lr, t->mu);
        t->epoch_exec = end_capture();
    }
}

/* ------------------------------------------------------------------ epochs */

typedef struct {
    double ms, loss;
    int diverged_step; /* -1 if every step's loss was finite */
} EpochResult;

/* Makes the next order (drawn while the last epoch ran) this epoch's, on the host. */
static void take_next_order(Trainer *t)
{
    int *current = t->h_next_order;
    t->h_next_order = t->h_order;
    t->h_order = current;
}

/* ... and (copied) on the GPU, unless the family takes each order to the GPU itself, while
 * the epoch before runs (next_order_drawn). */
static void begin_epoch_order(Trainer *t)
{
    take_next_order(t);
    if (t->impl->launch->next_order_drawn) return;
    CUDA_CHECK(cudaMemcpyAsync(t->order, t->h_order, (size_t)t->n_train * sizeof(int),
                               cudaMemcpyHostToDevice, cudaStreamPerThread));
}

static EpochResult run_epoch(Trainer *t)
{
    EpochResult r = {0.0, 0.0, -1};
    int steps = steps_per_epoch(t);
    CUDA_CHECK(cudaDeviceSynchronize());
    double t0 = wall_ms();
    begin_epoch_order(t);
    if (t->impl->launch->epoch) {
        reset_epoch_counters(t);
        t->impl->launch->epoch(t);
    } else if (t->impl->extra.graph == GRAPH_EPOCH) {
        CUDA_CHECK(cudaGraphLaunch(t->epoch_exec, cudaStreamPerThread));
    } else {
        reset_epoch_counters(t);
        family_begin_epoch(t);
        for (int s = 0; s < steps; s++) {
            int b = batch_of_step(t, s);
            if (t->impl->extra.graph == GRAPH_STEP)
                CUDA_CHECK(
                    cudaGraphLaunch(t->step_exec[b == t->batch ? 0 : 1], cudaStreamPerThread));
            else
                t->impl->launch->step(t, s, b, t->lr, t->mu);
            if (t->impl->extra.sync_each) { /* the first attempt reads the loss back every step */
                float loss;
                CUDA_CHECK(
                    cudaMemcpy(&loss, t->step_loss + s, sizeof(float), cudaMemcpyDeviceToHost));
                if (!isfinite(loss)) {
                    r.diverged_step = s;
                    break;
                }
            }
        }
    }
    draw_next_order(t); /* on the CPU, while the GPU works through the epoch */
    if (t->impl->launch->next_order_drawn) t->impl->launch->next_order_drawn(t);
    CUDA_CHECK(cudaMemcpyAsync(t->h_step_loss, t->step_loss, (size_t)steps * sizeof(float),
                               cudaMemcpyDeviceToHost, cudaStreamPerThread));
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    r.ms = wall_ms() - t0;
    double sum = 0.0;
    for (int s = 0; s < steps && r.diverged_step < 0; s++) {
        if (!isfinite(t->h_step_loss[s])) r.diverged_step = s;
        sum += t->h_step_loss[s];
    }
    r.loss = sum / t->n_train;
    return r;
}

/* ------------------------------------------------------------------ a training run */

typedef struct {
    double median_ms, accuracy;
    int epochs;
    int diverged_epoch; /* 0 if every epoch's losses were finite */
} TrainResult;

/* What a training run needs from whatever runs its epochs: one trainer (trainer_runner
 * below), or the replicas of part3_data_parallel/03_dp_trainer.cuh. */
typedef struct {
    const char *name;
    int batch, steps;
    float lr;
    void *ctx;
    EpochResult (*run_epoch)(void *ctx);
    double (*evaluate)(void *ctx, double *loss); /* test accuracy, mean test loss */
} EpochRunner;

static void epoch_csv_row(const char *path, const char *gpu, const char *impl, const char *dataset,
                          int batch, int epoch, double loss, double acc, double ms)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "cannot open %s for appending\n", path);
        exit(1);
    }
    if (ftell(f) == 0)
        fprintf(f, "gpu,impl,dataset,batch,epoch,train_loss,test_accuracy,epoch_ms\n");
    fprintf(f, "%s,%s,%s,%d,%d,%.6f,%.2f,%.4f\n", gpu, impl, dataset, batch, epoch, loss, acc, ms);
    fclose(f);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Trains `epochs` epochs, one progress line each. On divergence: exits 1 if
 * stop_on_divergence, else notes the epoch and goes on (the bench, which times epochs).
 * The epoch time is the median of the epochs after the first (module loading, first
 * touches), the upper one of the middle two for an even count. */
static TrainResult train_epochs(const EpochRunner *er, int epochs, const char *gpu,
                                const char *dataset, const char *epoch_csv, int stop_on_divergence)
{
    TrainResult res = {0.0, 0.0, epochs, 0};
    double *ms = (double *)xmalloc((size_t)(epochs + 1) * sizeof(double));
    for (int e = 1; e <= epochs; e++) {
        EpochResult r = er->run_epoch(er->ctx);
        if (r.diverged_step >= 0 && (stop_on_divergence || !res.diverged_epoch)) {
            fprintf(stderr,
                    "training diverged: the loss is not finite at epoch %d, step %d of %d "
                    "(%s, lr %g): try a smaller --lr\n",
                    e, r.diverged_step + 1, er->steps, er->name, er->lr);
            if (stop_on_divergence) exit(1);
            res.diverged_epoch = e;
        }
        double test_loss, acc = er->evaluate(er->ctx, &test_loss);
        printf("  %-12s epoch %3d  train loss %.4f  test loss %.4f  test accuracy %6.2f%%  epoch "
               "%9.2f ms\n",
               er->name, e, r.loss, test_loss, acc, r.ms);
        fflush(stdout);
        if (epoch_csv)
            epoch_csv_row(epoch_csv, gpu, er->name, dataset, er->batch, e, r.loss, acc, r.ms);
        ms[e - 1] = r.ms;
        res.accuracy = acc;
    }
    if (epochs > 1) {
        qsort(ms + 1, (size_t)(epochs - 1), sizeof(double), compare_double);
        res.median_ms = ms[1 + (epochs - 1) / 2];
    } else if (epochs == 1) {
        res.median_ms = ms[0];
    } else {
        res.accuracy = er->evaluate(er->ctx, NULL);
    }
    free(ms);
    return res;
}

static EpochResult run_trainer_epoch(void *t) { return run_epoch((Trainer *)t); }

static double evaluate_trainer(void *p, double *loss)
{
    Trainer *t = (Trainer *)p;
    return t->impl->launch->evaluate(t, loss);
}

/* One trainer's epochs, its graphs prepared. */
static EpochRunner trainer_runner(Trainer *t)
{
    trainer_prepare_graphs(t);
    EpochRunner er = {t->impl->name,     t->batch,        steps_per_epoch(t), t->lr, t,
                      run_trainer_epoch, evaluate_trainer};
    return er;
}

/* Trains one trainer `epochs` epochs, one progress line each; exits 1 on divergence. */
static TrainResult train(Trainer *t, int epochs, const char *gpu, const char *dataset,
                         const char *epoch_csv)
{
    EpochRunner er = trainer_runner(t);
    return train_epochs(&er, epochs, gpu, dataset, epoch_csv, 1);
}

#endif
