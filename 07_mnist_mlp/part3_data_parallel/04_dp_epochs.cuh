/* Chapter 07, part three: the data-parallel trainer's epochs (part3_data_parallel/03_dp_trainer.cuh
 * holds the replicas, 03_dp_step.cuh one step): an epoch on every GPU, the test pass, the replicas
 * compared bit for bit, and --train (--gpus N, or a launcher's ranks). */
#ifndef CH07_DATA_PARALLEL_EPOCH_CUH
#define CH07_DATA_PARALLEL_EPOCH_CUH

#include "07_mnist_mlp/part3_data_parallel/03_dp_step.cuh"

#ifdef HAVE_NCCL

/* ------------------------------------------------------------------ an epoch */

/* The epoch's order (drawn by local replica 0 as one GPU would draw it: every rank draws
 * the same from the same seed) cut into each replica's slices, step after step, and
 * uploaded; counters cleared; each replica's first slice gathered. */
static void dp_begin_epoch(DataParallel *dp)
{
    const DpComm *c = dp->c;
    Trainer *t0 = &dp->rep[0];
    take_next_order(t0);
    for (int g = 0; g < c->local; g++) {
        int at = dp_cut_order(t0->h_order, dp->n_train, dp->batch, c->world, c->rank + g,
                              dp->h_slices[g]);
        Trainer *t = &dp->rep[g];
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMemcpyAsync(t->order, dp->h_slices[g], (size_t)at * sizeof(int),
                                   cudaMemcpyHostToDevice, cudaStreamPerThread));
        reset_epoch_counters(t);
        int rows = dp_slice(dp, 0, g).rows;
        if (rows > 0) {
            MlpSource src = train_source(t);
            MlpBatch dst = fused_batch(t);
            launch_gather(&src, 0, rows, &dst);
        }
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
}

/* The timeline starts: every GPU idle (over ranks: after the all-reduce of one float, which
 * every rank leaves at nearly the same moment), an origin event on each, back to back. */
static void dp_trace_start(DataParallel *dp)
{
    const DpComm *c = dp->c;
    dp_wait_idle(c);
    if (c->local < c->world) {
        dp_allreduce_group(c, (void *const *)dp->grad, 0, 1, ncclFloat);
        dp_wait_idle(c);
    }
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaEventRecord(dp->trace->origin[g], cudaStreamPerThread));
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    dp->trace->on = 1;
}

/* An epoch on every GPU, timed like run_epoch (driver/epochs.cuh): wall clock from the order's
 * upload to the losses back on the host. A step's loss is the sum of the replicas' slots:
 * summed here over this process's replicas, then (after the clock stops) over the ranks. */
static EpochResult dp_run_epoch(void *ctx)
{
    DataParallel *dp = (DataParallel *)ctx;
    const DpComm *c = dp->c;
    EpochResult r = {0.0, 0.0, -1};
    dp_arm("an epoch of training");
    dp_wait_idle(c);
    double t0 = wall_ms();
    dp_begin_epoch(dp);
    for (int s = 0; s < dp->steps; s++) {
        if (dp->trace && s == dp->trace->first) dp_trace_start(dp);
        dp_step(dp, s, dp->rep[0].lr, dp->rep[0].mu);
        dp_progress();
        if (dp->trace && s == dp->trace->first + dp->trace->count - 1) dp->trace->on = 0;
    }
    draw_next_order(&dp->rep[0]); /* on the CPU, while the GPUs work through the epoch */
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMemcpyAsync(dp->rep[g].h_step_loss, dp->rep[g].step_loss,
                                   (size_t)dp->steps * sizeof(float), cudaMemcpyDeviceToHost,
                                   cudaStreamPerThread));
    }
    dp_wait_idle(c);
    r.ms = wall_ms() - t0;
    float *loss = dp->rep[0].h_step_loss;
    if (c->local < c->world) { /* the other ranks' slots: summed on the GPUs, read back */
        void *slots[DP_MAX_GPUS];
        for (int g = 0; g < c->local; g++) slots[g] = dp->rep[g].step_loss;
        dp_allreduce_group(c, slots, 0, (size_t)dp->steps, ncclFloat);
        dp_wait_idle(c);
        CUDA_CHECK(cudaMemcpy(loss, dp->rep[0].step_loss, (size_t)dp->steps * sizeof(float),
                              cudaMemcpyDeviceToHost));
    }
    double sum = 0.0;
    for (int s = 0; s < dp->steps && r.diverged_step < 0; s++) {
        double step = 0.0;
        for (int g = 0; g < (c->local < c->world ? 1 : c->local); g++)
            step += dp->rep[g].h_step_loss[s];
        if (!isfinite(step)) r.diverged_step = s;
        sum += step;
    }
    r.loss = sum / dp->n_train;
    dp_disarm();
    return r;
}

/* Test accuracy on local replica 0 (they are all the same). */
static double dp_evaluate(void *ctx, double *loss)
{
    DataParallel *dp = (DataParallel *)ctx;
    CUDA_CHECK(cudaSetDevice(dp->c->dev[0]));
    return evaluate_fp32(&dp->rep[0], loss);
}

static EpochRunner dp_runner(DataParallel *dp)
{
    EpochRunner er = {dp->name, dp->batch, dp->steps, dp->rep[0].lr, dp, dp_run_epoch, dp_evaluate};
    return er;
}

/* Parameters and velocity values of every replica, on every rank, that differ from rank 0's
 * replica, bit for bit (0: the replicas are identical): rank 0's broadcast to all, each
 * local replica compared with it, the counts summed over the ranks. */
static size_t dp_replica_differences(const DataParallel *dp)
{
    const DpComm *c = dp->c;
    size_t n = dp->rep[0].l.total, bytes = 2 * n * sizeof(float);
    void *mine[DP_MAX_GPUS], *theirs[DP_MAX_GPUS];
    float *a = (float *)xmalloc(bytes), *b = (float *)xmalloc(bytes);
    unsigned long long diff[DP_MAX_GPUS];
    dp_wait_idle(c);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMalloc(&mine[g], bytes));
        CUDA_CHECK(cudaMalloc(&theirs[g], bytes));
        CUDA_CHECK(
            cudaMemcpy(mine[g], dp->rep[g].params, n * sizeof(float), cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemcpy((float *)mine[g] + n, dp->rep[g].vel, n * sizeof(float),
                              cudaMemcpyDeviceToDevice));
    }
    dp_wait_idle(c); /* the copies above ran on the kernels' streams, NCCL reads on its own */
    dp_arm("comparing the replicas");
    dp_broadcast(c, mine, theirs, bytes);
    dp_wait_idle(c);
    dp_disarm();
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMemcpy(a, mine[g], bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(b, theirs[g], bytes, cudaMemcpyDeviceToHost));
        diff[g] = 0;
        for (size_t i = 0; i < 2 * n; i++) diff[g] += memcmp(a + i, b + i, sizeof(float)) != 0;
        CUDA_CHECK(cudaFree(mine[g]));
        CUDA_CHECK(cudaFree(theirs[g]));
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    free(a);
    free(b);
    return (size_t)dp_sum_counts(c, diff);
}

static void dp_print_nccl(const DpComm *c)
{
    int version = 0;
    NCCL_CHECK(ncclGetVersion(&version));
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    printf("NCCL %d.%d.%d (built against %s): %d GPU%s, %s, communicators ready in %.0f ms, "
           "NCCL_NVLS_ENABLE=%s\n",
           version / 10000, version % 10000 / 100, version % 100, DP_NCCL_NOTE, c->world,
           c->world > 1 ? "s" : "",
           c->local == c->world ? "one process (--gpus)" : "one process each (a launcher's ranks)",
           c->init_ms, nvls ? nvls : "(unset)");
}

/* ------------------------------------------------------------------ --train */

/* Trains from `params` (replaced by the trained parameters) on the world's GPUs, global
 * batch `batch`. Returns 1 if the replicas did not end bitwise identical. */
static int dp_train(const Data *d, int n_train, int batch, const char *gpu, unsigned long long seed,
                    float *params, TrainResult *res)
{
    int n = dp_world_gpus();
    if (batch % n)
        cli_fail(&SPEC,
                 "the global batch is %d (the training set's size), which the %d GPUs do not "
                 "divide",
                 batch, n);
    DpComm c;
    dp_comm_open(&c, FLAGS.gpus);
    dp_print_nccl(&c);
    DataParallel dp;
    dp_create_or_fail(&dp, &c, &d->train, n_train, &d->test, FLAGS.hidden, batch, d->mean, d->std,
                      seed, dp_buckets(), FLAGS.symmetric);
    printf("%s: %d GPUs, %d images of each batch of %d on each; dW1's all-reduce %s%s\n", dp.name,
           c.world, dp.local_batch, batch,
           dp.buckets ? "in buckets, each started when its rows are done"
                      : "after the whole backward pass",
           dp.symmetric ? ", the gradients in symmetric memory" : "");
    dp_set_params(&dp, params, (float)learning_rate(batch), (float)FLAGS.momentum);
    EpochRunner er = dp_runner(&dp);
    *res = train_epochs(&er, FLAGS.epochs, gpu, d->name, dp_is_rank0() ? FLAGS.epoch_csv : NULL, 1);
    size_t diff = dp_replica_differences(&dp);
    if (diff)
        printf("replicas after training: %zu values of the other GPUs differ from GPU 0's\n", diff);
    else
        printf(
            "replicas after training: bitwise identical (parameters and velocity of all %d GPUs)\n",
            c.world);
    CUDA_CHECK(cudaMemcpy(params, dp.rep[0].params, dp.rep[0].l.total * sizeof(float),
                          cudaMemcpyDeviceToHost));
    dp_destroy(&dp);
    dp_comm_destroy(&c);
    return diff != 0;
}

#endif /* HAVE_NCCL */

#endif
