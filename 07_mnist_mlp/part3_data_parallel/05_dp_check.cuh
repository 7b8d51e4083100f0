/* Chapter 07, part three: --check of the data-parallel trainer
 * (part3_data_parallel/03_dp_trainer.cuh) with and without buckets:
 *   - driver/check.cuh's epoch of two steps against the double-precision CPU steps, with the
 *     global batch cut over the GPUs (in the smallest case the last batch has fewer rows
 *     than GPUs, so a GPU takes part in a step with no rows at all);
 *   - after each epoch, the replicas against each other, bit for bit (parameters and
 *     velocity);
 *   - an epoch on synthetic data against the one-GPU trainer `epoch_graph` (the same five-launch
 *     step) with the same global batch, weights and order.
 * With --gpus 1 all of it runs on one GPU (NCCL with one rank): the split, the separate
 * gradient, the update and the buckets are checked; only the sum over GPUs is trivial.
 * Under a launcher every rank runs the same check on its replica (and the one-GPU trainer on
 * its own GPU); the pieces that live on other ranks reach every rank through NCCL. */
#ifndef CH07_DATA_PARALLEL_CHECK_CUH
#define CH07_DATA_PARALLEL_CHECK_CUH

#include "07_mnist_mlp/driver/check.cuh"
#include "07_mnist_mlp/part3_data_parallel/04_dp_epochs.cuh"

#ifdef HAVE_NCCL

static int dp_check_replicas(const DataParallel *dp, const char *size)
{
    char what[64];
    snprintf(what, sizeof what, "%s replicas differ", dp->name);
    /* exact: every GPU applies the same update to the same sum */
    return !report_check(what, size, (double)dp_replica_differences(dp), 0.0);
}

/* The world's matrix of `rows` x `cols` floats whose rows first .. first + n - 1 each local
 * replica g holds at part[g] (its slice of the batch), put together on the host in the
 * global batch's row order: each replica's slice into a zeroed full matrix, the matrices
 * summed over the world (adding zeros changes no bit), read back from local replica 0. */
static float *dp_assemble_rows(const DataParallel *dp, int step, float *const *part, int rows,
                               int cols)
{
    const DpComm *c = dp->c;
    size_t bytes = (size_t)rows * cols * sizeof(float);
    void *full[DP_MAX_GPUS];
    for (int g = 0; g < c->local; g++) {
        DpSlice sl = dp_slice(dp, step, g);
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMalloc(&full[g], bytes));
        CUDA_CHECK(cudaMemset(full[g], 0, bytes));
        if (sl.rows > 0)
            CUDA_CHECK(cudaMemcpy((float *)full[g] + (size_t)sl.first * cols, part[g],
                                  (size_t)sl.rows * cols * sizeof(float),
                                  cudaMemcpyDeviceToDevice));
    }
    dp_wait_idle(c); /* the copies above ran on the kernels' streams, NCCL reads on its own */
    dp_arm("gathering the check's activations");
    dp_allreduce_group(c, full, 0, (size_t)rows * cols, ncclFloat);
    dp_wait_idle(c);
    dp_disarm();
    float *h = (float *)xmalloc(bytes);
    CUDA_CHECK(cudaMemcpy(h, full[0], bytes, cudaMemcpyDeviceToHost));
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaFree(full[g]));
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    return h;
}

/* The case's epoch of two steps on the GPUs of c. z1 and dz2 of the last step are put
 * together from the replicas' slices in the global batch's row order; the update leaves
 * v itself in the velocity (not mu v, as the fused step does). */
static int dp_check_case(const DpComm *c, const CheckCase *cc, int buckets, unsigned long long seed)
{
    const MlpLayout *l = &cc->l;
    int B = cc->batch, B2 = cc->last.batch, H = l->hidden;
    DataParallel dp;
    dp_create_or_fail(&dp, c, &cc->data, cc->n_train, NULL, H, B, CHECK_MEAN, CHECK_STD, seed,
                      buckets, FLAGS.symmetric);
    dp_set_params(&dp, cc->p0, CHECK_LR, CHECK_MU);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        poison_device(dp.rep[g].z1, (size_t)dp.local_batch * H * sizeof(float));
        poison_device(dp.rep[g].dz2, (size_t)dp.local_batch * MLP_CLASSES * sizeof(float));
    }
    EpochResult r = dp_run_epoch(&dp);
    if (dp.steps != 2 ||
        memcmp(dp.rep[0].h_order, cc->order, (size_t)cc->n_train * sizeof(int)) != 0) {
        fprintf(
            stderr,
            "internal error: the data-parallel trainer drew another batch order than the check\n");
        exit(1);
    }
    float *z1_part[DP_MAX_GPUS], *dz2_part[DP_MAX_GPUS];
    for (int g = 0; g < c->local; g++) {
        z1_part[g] = dp.rep[g].z1;
        dz2_part[g] = dp.rep[g].dz2;
    }
    float *z1 = dp_assemble_rows(&dp, 1, z1_part, B2, H),
          *dz2 = dp_assemble_rows(&dp, 1, dz2_part, B2, MLP_CLASSES);
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    float *v = download(dp.rep[0].vel, l->total), *np = download(dp.rep[0].params, l->total);
    char size[48];
    snprintf(size, sizeof size, "%d+%dx%d", B, B2, H);
    int fails = check_results(dp.name, &FP32_TOLERANCES, cc, r.loss, z1, dz2, v, np, 1);
    fails += dp_check_replicas(&dp, size);
    free(z1);
    free(dz2);
    free(v);
    free(np);
    dp_destroy(&dp);
    return fails;
}

/* One epoch of 6000 synthetic images, global batch 256 (rounded up to a multiple of N), --hidden
 * units, the training learning rate and momentum, on N GPUs and on one GPU with the trainer
 * `epoch_graph` (the replicas' five-launch step), from the same weights in the same order. Only
 * rounding tells them apart: the gradient is summed in another order (over GPUs, then into v, where
 * the fused step adds it onto mu v), and the split-K products sum in no fixed order at all.
 * Tolerances:
 *   loss  1e-4 relative: each step's loss is taken before its update, from weights that
 *         differ by the rounding of the steps before;
 *   weights  1e-2 of the distance the epoch moved them (|w_N - w_1| / |w_1 - w_0|): a unit
 *         on the other side of the ReLU kink in one step (driver/check.cuh) changes that step's
 *         gradient by about 4e-4, and momentum carries it on, but the epoch's 24 steps
 *         move the weights hundreds of such amounts; a slice summed twice or not at all,
 *         or a gradient scaled by the slice instead of the global batch, moves it by
 *         a sizeable fraction of the whole distance. */
static int dp_check_vs_one_gpu(const DpComm *c, unsigned long long seed)
{
    const int n = 6000, H = FLAGS.hidden;
    int B = (256 + c->world - 1) / c->world * c->world, fails = 0;
    float lr = (float)learning_rate(B), mu = (float)FLAGS.momentum, mean, std;
    IdxDataset train;
    synthesize(&train, n, 11);
    pixel_stats(&train, n, &mean, &std);
    MlpLayout l = mlp_layout(IDX_PIXELS, H);
    float *p0 = (float *)xmalloc(l.total * sizeof(float));
    mlp_init(p0, &l, seed);
    Trainer t;
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    trainer_create(&t, find_impl("epoch_graph"), &train, n, NULL, H, B, mean, std, seed);
    trainer_set_params(&t, p0, lr, mu);
    trainer_prepare_graphs(&t);
    EpochResult one = run_epoch(&t);
    float *w1 = download(t.params, l.total);
    trainer_destroy(&t);
    double moved = 0.0;
    for (size_t i = 0; i < l.total; i++) moved += ((double)w1[i] - p0[i]) * ((double)w1[i] - p0[i]);
    char size[48], what[96];
    snprintf(size, sizeof size, "%dx%d", B, H);
    printf("  one epoch of %d synthetic images, batch %d, against the one-GPU trainer epoch_graph "
           "(loss %.6f)\n",
           n, B, one.loss);
    const int variants[2] = {0, dp_buckets()};
    for (int i = 0; i < (variants[1] ? 2 : 1); i++) {
        DataParallel dp;
        dp_create_or_fail(&dp, c, &train, n, NULL, H, B, mean, std, seed, variants[i],
                          FLAGS.symmetric);
        dp_set_params(&dp, p0, lr, mu);
        EpochResult r = dp_run_epoch(&dp);
        float *w = download(dp.rep[0].params, l.total);
        double apart = 0.0;
        for (size_t k = 0; k < l.total; k++)
            apart += ((double)w[k] - w1[k]) * ((double)w[k] - w1[k]);
        snprintf(what, sizeof what, "%s vs epoch_graph loss", dp.name);
        fails += !report_check(
            what, size, isfinite(r.loss) ? fabs(r.loss - one.loss) / one.loss : INFINITY, 1e-4);
        snprintf(what, sizeof what, "%s vs epoch_graph weights", dp.name);
        fails += !report_check(what, size, moved > 0.0 ? sqrt(apart / moved) : INFINITY, 1e-2);
        fails += dp_check_replicas(&dp, size);
        free(w);
        dp_destroy(&dp);
    }
    free(w1);
    free(p0);
    idx_free(&train);
    return fails;
}

/* --check (--gpus N, or a launcher's ranks): -n BATCHxHIDDEN cases (the batch global, a
 * multiple of N), by default 1x3, 37x50 and 256x1024 with the batch rounded up to a multiple
 * of N. */
static int dp_check(const Options *o)
{
    static const int DEFAULT_SHAPES[][2] = {{1, 3}, {37, 50}, {256, 1024}};
    DpComm c;
    dp_comm_open(&c, FLAGS.gpus);
    dp_print_nccl(&c);
    int n = o->nsizes ? o->nsizes : 3, fails = 0, buckets = dp_buckets();
    printf("\ncheck (seed %llu): an epoch of two training steps (B rows, then fewer) of the "
           "data-parallel trainer on "
           "%d GPU%s against double-precision CPU steps\n",
           o->seed, c.world, c.world > 1 ? "s" : "");
    for (int i = 0; i < n; i++) {
        int B = o->nsizes ? (int)o->sizes[i].dim[0]
                          : (DEFAULT_SHAPES[i][0] + c.world - 1) / c.world * c.world;
        int H = o->nsizes ? (o->sizes[i].ndims > 1 ? (int)o->sizes[i].dim[1] : FLAGS.hidden)
                          : DEFAULT_SHAPES[i][1];
        unsigned long long seed = o->seed + 100 * (unsigned long long)i;
        CheckCase cc;
        check_case_create(&cc, B, H, seed);
        fails += dp_check_case(&c, &cc, 0, seed);
        if (buckets) fails += dp_check_case(&c, &cc, buckets, seed);
        check_case_free(&cc);
    }
    fails += dp_check_vs_one_gpu(&c, o->seed);
    dp_comm_destroy(&c);
    printf("%s\n", fails ? "CHECK FAILED" : "all checks passed");
    return fails;
}

#endif /* HAVE_NCCL */

#endif
