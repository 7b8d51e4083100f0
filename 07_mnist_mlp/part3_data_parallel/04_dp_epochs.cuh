/* Chapter 07, part three: the data-parallel trainer's epochs (part3_data_parallel/03_dp_trainer.cuh
 * holds the replicas and one step): an epoch on every GPU, the test pass, the replicas compared bit
 * for bit, and --train --gpus N. */
#ifndef CH07_DATA_PARALLEL_EPOCH_CUH
#define CH07_DATA_PARALLEL_EPOCH_CUH

#include "07_mnist_mlp/part3_data_parallel/03_dp_trainer.cuh"

#ifdef HAVE_NCCL

/* ------------------------------------------------------------------ an epoch */

/* The epoch's order (drawn by replica 0 as one GPU would draw it) cut into each replica's
 * slices, step after step, and uploaded; counters cleared; each replica's first slice
 * gathered. */
static void dp_begin_epoch(DataParallel *dp)
{
    Trainer *t0 = &dp->rep[0];
    take_next_order(t0);
    for (int g = 0; g < dp->c->gpus; g++) {
        int at = dp_cut_order(t0->h_order, dp->n_train, dp->batch, dp->c->gpus, g, dp->h_slices[g]);
        Trainer *t = &dp->rep[g];
        CUDA_CHECK(cudaSetDevice(g));
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
    CUDA_CHECK(cudaSetDevice(0));
}

/* The timeline starts: every GPU idle, an origin event on each, back to back. */
static void dp_trace_start(DataParallel *dp)
{
    dp_sync_all(dp->c->gpus);
    for (int g = 0; g < dp->c->gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaEventRecord(dp->trace->origin[g], cudaStreamPerThread));
    }
    CUDA_CHECK(cudaSetDevice(0));
    dp->trace->on = 1;
}

/* An epoch on every GPU, timed like run_epoch (driver/epochs.cuh): wall clock from the order's
 * upload to the losses back on the host. A step's loss is the sum of the replicas' slots. */
static EpochResult dp_run_epoch(void *ctx)
{
    DataParallel *dp = (DataParallel *)ctx;
    EpochResult r = {0.0, 0.0, -1};
    int gpus = dp->c->gpus;
    dp_sync_all(gpus);
    double t0 = wall_ms();
    dp_begin_epoch(dp);
    for (int s = 0; s < dp->steps; s++) {
        if (dp->trace && s == dp->trace->first) dp_trace_start(dp);
        dp_step(dp, s, dp->rep[0].lr, dp->rep[0].mu);
        if (dp->trace && s == dp->trace->first + dp->trace->count - 1) dp->trace->on = 0;
    }
    draw_next_order(&dp->rep[0]); /* on the CPU, while the GPUs work through the epoch */
    for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaMemcpyAsync(dp->rep[g].h_step_loss, dp->rep[g].step_loss,
                                   (size_t)dp->steps * sizeof(float), cudaMemcpyDeviceToHost,
                                   cudaStreamPerThread));
    }
    dp_sync_all(gpus);
    r.ms = wall_ms() - t0;
    double sum = 0.0;
    for (int s = 0; s < dp->steps && r.diverged_step < 0; s++) {
        double step = 0.0;
        for (int g = 0; g < gpus; g++) step += dp->rep[g].h_step_loss[s];
        if (!isfinite(step)) r.diverged_step = s;
        sum += step;
    }
    r.loss = sum / dp->n_train;
    return r;
}

/* Test accuracy on replica 0 (they are all the same). */
static double dp_evaluate(void *ctx, double *loss)
{
    DataParallel *dp = (DataParallel *)ctx;
    CUDA_CHECK(cudaSetDevice(0));
    return evaluate_fp32(&dp->rep[0], loss);
}

static EpochRunner dp_runner(DataParallel *dp)
{
    EpochRunner er = {dp->name, dp->batch, dp->steps, dp->rep[0].lr, dp, dp_run_epoch, dp_evaluate};
    return er;
}

/* Parameters and velocity values of replicas 1 .. N-1 that differ from replica 0's, bit
 * for bit (0: the replicas are identical). */
static size_t dp_replica_differences(const DataParallel *dp)
{
    size_t n = dp->rep[0].l.total, diff = 0;
    float *a = (float *)xmalloc(2 * n * sizeof(float)),
          *b = (float *)xmalloc(2 * n * sizeof(float));
    for (int g = 0; g < dp->c->gpus; g++) {
        float *h = g == 0 ? a : b;
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaMemcpy(h, dp->rep[g].params, n * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(h + n, dp->rep[g].vel, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; g > 0 && i < 2 * n; i++)
            diff += memcmp(a + i, b + i, sizeof(float)) != 0;
    }
    CUDA_CHECK(cudaSetDevice(0));
    free(a);
    free(b);
    return diff;
}

static void dp_print_nccl(const DpComm *c)
{
    int version = 0;
    NCCL_CHECK(ncclGetVersion(&version));
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    printf("NCCL %d.%d.%d (built against %s): %d GPU%s, communicators ready in %.0f ms, "
           "NCCL_NVLS_ENABLE=%s\n",
           version / 10000, version % 10000 / 100, version % 100, DP_NCCL_NOTE, c->gpus,
           c->gpus > 1 ? "s" : "", c->init_ms, nvls ? nvls : "(unset)");
}

/* ------------------------------------------------------------------ --train --gpus N */

/* Trains from `params` (replaced by the trained parameters) on FLAGS.gpus GPUs, global
 * batch `batch`. Returns 1 if the replicas did not end bitwise identical. */
static int dp_train(const Data *d, int n_train, int batch, const char *gpu, unsigned long long seed,
                    float *params, TrainResult *res)
{
    if (batch % FLAGS.gpus)
        cli_fail(
            &SPEC,
            "the global batch is %d (the training set's size), which --gpus %d does not divide",
            batch, FLAGS.gpus);
    DpComm c;
    dp_comm_create(&c, FLAGS.gpus);
    dp_print_nccl(&c);
    DataParallel dp;
    dp_create(&dp, &c, &d->train, n_train, &d->test, FLAGS.hidden, batch, d->mean, d->std, seed,
              dp_buckets());
    printf("%s: %d GPUs, %d images of each batch of %d on each; dW1's all-reduce %s\n", dp.name,
           c.gpus, dp.local_batch, batch,
           dp.buckets ? "in buckets, each started when its rows are done"
                      : "after the whole backward pass");
    dp_set_params(&dp, params, (float)learning_rate(batch), (float)FLAGS.momentum);
    EpochRunner er = dp_runner(&dp);
    *res = train_epochs(&er, FLAGS.epochs, gpu, d->name, FLAGS.epoch_csv, 1);
    size_t diff = dp_replica_differences(&dp);
    if (diff)
        printf("replicas after training: %zu values of GPUs 1-%d differ from GPU 0's\n", diff,
               c.gpus - 1);
    else
        printf(
            "replicas after training: bitwise identical (parameters and velocity of all %d GPUs)\n",
            c.gpus);
    CUDA_CHECK(cudaMemcpy(params, dp.rep[0].params, dp.rep[0].l.total * sizeof(float),
                          cudaMemcpyDeviceToHost));
    dp_destroy(&dp);
    dp_comm_destroy(&c);
    return diff != 0;
}

#endif /* HAVE_NCCL */

#endif
