/* Chapter 07, part three: --bench of the data-parallel trainer (--gpus N in one process, or
 * a launcher's N ranks). For each per-GPU batch b and hidden size H (-n BxH; default b =
 * 256, 1024, 4096 with H = 1024 and 4096):
 *   - images per second of the data-parallel trainer on one GPU (global batch b) and on N
 *     GPUs (global batch N b), without and with buckets: weak scaling, every GPU's share
 *     of a step the same; the ceiling of an N-GPU row is N times the one-GPU row;
 *   - with --symmetric, the same two N-GPU runs with the gradients in NCCL's symmetric
 *     memory (rows ..._sym), and NCCL's all-reduce alone in it;
 *   - the one-GPU trainer `epoch_graph` (the same five-launch step) at batch b, the ceiling of the
 *     one-GPU row: what the data-parallel machinery (no graph, events, a separate gradient) costs
 *     on one GPU;
 *   - NCCL's own all-reduce of the gradient's size, alone on the GPUs (algbw, busbw), and
 *     the step's all-reduce measured inside the step on GPU 0: its span, and the part
 *     that the backward pass did not hide (exposed);
 *   - at per-GPU batch 256: the test accuracy against `epoch_graph` at the same global
 *     batch, within 0.3 points (checked after 10 epochs or more).
 * The rows go to the CSV as chapter 07_mnist_mlp_dp, so that plot.py draws them apart from
 * the one-GPU trainers: img/s (throughput), ms (a step on one GPU, the all-reduce alone and
 * its exposed part; % ceiling above 100 means shorter than the step), GB/s (bus bandwidth
 * in the step against NCCL's own). --timeline FILE: every launch and all-reduce of two
 * steps at per-GPU batch 1024, H 4096 (else the last size), one row per GPU and stream.
 * Under a launcher every rank runs the same runs (its one-GPU runs on its own GPU); rank 0
 * prints the table and writes the CSV, the other ranks send it their timeline rows. */
#ifndef CH07_DATA_PARALLEL_BENCH_CUH
#define CH07_DATA_PARALLEL_BENCH_CUH

#include "common/report.h"
#include "common/validate.h"
#include "07_mnist_mlp/driver/data.cuh"
#include "07_mnist_mlp/part3_data_parallel/04_dp_epochs.cuh"

#ifdef HAVE_NCCL

#define DP_CHAPTER "07_mnist_mlp_dp"
#define DP_TIMELINE_BATCH 1024
#define DP_TIMELINE_HIDDEN 4096

/* The bench's learning rate: the training rule (0.05 x batch / 256, or --lr) up to batch
 * 1024, held at 0.2 above it. The bench times epochs at global batches up to N x 4096,
 * where the rule would give 1.6 and more with momentum 0.9; a run that diverged there
 * would still be timed (the arithmetic is the same) but its accuracy would mean nothing. */
static float dp_bench_lr(int batch) { return (float)learning_rate(batch < 1024 ? batch : 1024); }

typedef struct {
    TrainResult train;
    double step_ms; /* the epoch's median time / its steps */
    double ar_ms; /* GPU 0, median over the measured steps: first all-reduce begun to last ended */
    double exposed_ms; /* ... gradient complete to last all-reduce ended: what the step waited */
    int steps;
} DpBenchResult;

/* One more epoch with the probe on its first steps (not the last, which may be short):
 * the medians of the all-reduce's span and of its exposed part, on local GPU 0. */
static void dp_measure_in_step(DataParallel *dp, double *span_ms, double *exposed_ms)
{
    DpProbe *pr = (DpProbe *)xmalloc(sizeof *pr);
    pr->count = dp->steps > 1 ? dp->steps - 1 : 1;
    if (pr->count > DP_PROBE_STEPS) pr->count = DP_PROBE_STEPS;
    CUDA_CHECK(cudaSetDevice(dp->c->dev[0]));
    for (int w = 0; w < 3; w++)
        for (int s = 0; s < pr->count; s++) CUDA_CHECK(cudaEventCreate(&pr->ev[w][s]));
    dp->probe = pr;
    dp_run_epoch(dp);
    dp->probe = NULL;
    double span[DP_PROBE_STEPS], exposed[DP_PROBE_STEPS];
    for (int s = 0; s < pr->count; s++) {
        float a, b;
        CUDA_CHECK(cudaEventElapsedTime(&a, pr->ev[DP_AR_BEGIN][s], pr->ev[DP_AR_END][s]));
        CUDA_CHECK(cudaEventElapsedTime(&b, pr->ev[DP_GRAD_DONE][s], pr->ev[DP_AR_END][s]));
        span[s] = a;
        exposed[s] = b;
    }
    *span_ms = median_double(span, pr->count);
    *exposed_ms = median_double(exposed, pr->count);
    for (int w = 0; w < 3; w++)
        for (int s = 0; s < pr->count; s++) CUDA_CHECK(cudaEventDestroy(pr->ev[w][s]));
    free(pr);
}

/* One more epoch with steps 1 and 2 on the timeline, written to f (rank 0) as pipeline
 * dp->name, one row per GPU (by its rank) and stream. Under a launcher the other ranks
 * write their rows into memory and send them to rank 0 over the control channel. */
static void dp_write_timeline(DataParallel *dp, FILE *f)
{
    const DpComm *c = dp->c;
    DpTrace *tr = (DpTrace *)xmalloc(sizeof *tr);
    memset(tr, 0, sizeof *tr);
    tr->first = dp->steps > 2 ? 1 : 0;
    tr->count = dp->steps - tr->first < 2 ? dp->steps - tr->first : 2;
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        tr->tl[g] = (Timeline *)xmalloc(sizeof(Timeline));
        tr->tl[g]->count = 0;
        CUDA_CHECK(cudaEventCreate(&tr->origin[g]));
        snprintf(tr->row[g][DP_ROW_COMPUTE], sizeof tr->row[g][0], "gpu%d compute", c->rank + g);
        snprintf(tr->row[g][DP_ROW_COMM], sizeof tr->row[g][0], "gpu%d comm", c->rank + g);
    }
    dp->trace = tr;
    dp_run_epoch(dp);
    dp->trace = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = dp_is_rank0() ? f : open_memstream(&text, &len);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        timeline_write(out, dp->name, tr->tl[g], tr->origin[g]);
        CUDA_CHECK(cudaEventDestroy(tr->origin[g]));
        free(tr->tl[g]);
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    free(tr);
    if (c->local == c->world) return;
    if (!dp_is_rank0()) fclose(out);
    char **all = (char **)calloc((size_t)c->world, sizeof(char *)), why[RDV_TEXT + 64];
    size_t *lens = (size_t *)calloc((size_t)c->world, sizeof(size_t));
    if (rdv_gather(dp_rdv(), text, len, all, lens, why, sizeof why)) dp_world_stop(RDV_BROKEN, why);
    for (int k = 1; dp_is_rank0() && k < c->world; k++) fwrite(all[k], 1, lens[k], f);
    for (int k = 0; k < c->world; k++) free(all[k]);
    free(all);
    free(lens);
    free(text);
}

/* The data-parallel trainer on the GPUs of c, global batch `batch`: --epochs timed epochs
 * (and the test accuracy after them), then one epoch measured inside the steps, then (if
 * timeline is not NULL) one epoch with two steps on the timeline. */
static DpBenchResult dp_bench_run(const DpComm *c, const Data *d, int n_train, int batch,
                                  int hidden, int buckets, int symmetric, const float *p0,
                                  unsigned long long seed, const char *gpu, int timeline, FILE *f)
{
    DpBenchResult res;
    memset(&res, 0, sizeof res);
    DataParallel dp;
    char why[600];
    if (dp_create(&dp, c, &d->train, n_train, &d->test, hidden, batch, d->mean, d->std, seed,
                  buckets, symmetric, why, sizeof why)) {
        printf("  symmetric memory: %s; no _sym rows\n", why);
        return res;
    }
    dp_set_params(&dp, p0, dp_bench_lr(batch), (float)FLAGS.momentum);
    EpochRunner er = dp_runner(&dp);
    res.train =
        train_epochs(&er, FLAGS.epochs, gpu, d->name, dp_is_rank0() ? FLAGS.epoch_csv : NULL, 0);
    res.steps = dp.steps;
    res.step_ms = res.train.median_ms / dp.steps;
    dp_measure_in_step(&dp, &res.ar_ms, &res.exposed_ms);
    if (timeline) dp_write_timeline(&dp, f);
    dp_destroy(&dp);
    return res;
}

/* The one-GPU trainer `epoch_graph` (the fused step the replicas run, whole-epoch graph) on
 * this process's (first) GPU. */
static TrainResult dp_bench_one_gpu(const Data *d, int n_train, int batch, int hidden,
                                    const float *p0, unsigned long long seed, const char *gpu)
{
    CUDA_CHECK(cudaSetDevice(DP_WORLD.ranks ? DP_WORLD.device : 0));
    Trainer t;
    trainer_create(&t, find_impl("epoch_graph"), &d->train, n_train, &d->test, hidden, batch,
                   d->mean, d->std, seed);
    trainer_set_params(&t, p0, dp_bench_lr(batch), (float)FLAGS.momentum);
    EpochRunner er = trainer_runner(&t);
    TrainResult r =
        train_epochs(&er, FLAGS.epochs, gpu, d->name, dp_is_rank0() ? FLAGS.epoch_csv : NULL, 0);
    trainer_destroy(&t);
    return r;
}

static double images_per_s(int n_train, double epoch_ms)
{
    return epoch_ms > 0.0 ? n_train / (epoch_ms * 1e-3) : 0.0;
}

/* Prints the row (speedup against base_ms, blank if 0) and appends it to the CSV (rank 0). */
static void dp_row(const Options *o, const char *gpu, const char *kernel, const char *role,
                   const char *size, double time_ms, double value, const char *unit,
                   const char *ceiling, double ceiling_value, double base_ms)
{
    if (time_ms <= 0.0) return; /* not measured (--epochs 0, one GPU, no symmetric memory) */
    BenchRow r = {kernel, role, size, time_ms, value, unit, ceiling, ceiling_value};
    report_row(dp_is_rank0() ? o->csv : NULL, gpu, DP_CHAPTER, &r, base_ms);
}

/* One per-GPU batch and hidden size: runs, rows, summary; returns failed accuracy checks.
 * tl: its runs go on the timeline (written to `timeline` on rank 0). */
static int dp_bench_size(const Options *o, const DeviceInfo *info, const Data *d, const DpComm *all,
                         const DpComm *single, int b, int H, int tl, FILE *timeline)
{
    const int N = all->world, K = dp_buckets(), S = FLAGS.symmetric && N > 1;
    const char *gpu = info->name;
    int n_train = FLAGS.train_size < d->train.count ? FLAGS.train_size : d->train.count, failed = 0;
    MlpLayout l = mlp_layout(IDX_PIXELS, H);
    float *p0 = (float *)xmalloc(l.total * sizeof(float));
    mlp_init(p0, &l, o->seed);
    printf("\nper-GPU batch %d, hidden %d: %d GPU%s (global batch %d) against 1 (batch %d), %d "
           "training images, lr %g "
           "(batch %d) and %g (batch %d), momentum %g, %s\n",
           b, H, N, N > 1 ? "s" : "", N * b, b, n_train, dp_bench_lr(N * b), N * b, dp_bench_lr(b),
           b, FLAGS.momentum, d->name);
    DpBenchResult none = {}, one = dp_bench_run(single, d, n_train, b, H, 0, 0, p0, o->seed, gpu,
                                                N == 1 && tl, timeline);
    DpBenchResult plain =
        N > 1 ? dp_bench_run(all, d, n_train, N * b, H, 0, 0, p0, o->seed, gpu, tl, timeline) : one;
    DpBenchResult buckets =
        K ? dp_bench_run(all, d, n_train, N * b, H, K, 0, p0, o->seed, gpu, tl, timeline) : none;
    DpBenchResult sym =
        S ? dp_bench_run(all, d, n_train, N * b, H, 0, 1, p0, o->seed, gpu, 0, NULL) : none;
    DpBenchResult sym_buckets =
        S && K ? dp_bench_run(all, d, n_train, N * b, H, K, 1, p0, o->seed, gpu, 0, NULL) : none;
    TrainResult opt = dp_bench_one_gpu(d, n_train, b, H, p0, o->seed, gpu);
    size_t grad = l.total, bytes = grad * sizeof(float), pieces[DP_MAX_BUCKETS];
    int edge[DP_MAX_BUCKETS + 1];
    dp_bucket_rows(K, edge);
    for (int k = 0; k < K; k++) pieces[k] = (size_t)(edge[k + 1] - edge[k]) * H;
    if (K) pieces[K - 1] += l.total - l.b1; /* the last bucket carries b1, W2, b2 */
    char why[600];
    double alone = dp_allreduce_alone_ms(all, &grad, 1, o->reps, 0, why, sizeof why);
    double alone_pieces =
        K ? dp_allreduce_alone_ms(all, pieces, K, o->reps, 0, why, sizeof why) : 0.0;
    double alone_sym = S ? dp_allreduce_alone_ms(all, &grad, 1, o->reps, 1, why, sizeof why) : 0.0;
    if (alone_sym < 0.0) {
        printf("  symmetric memory: %s; no nccl_allreduce_..._sym row\n", why);
        alone_sym = 0.0;
    }

    char size[32], title[200], name[20][64];
    snprintf(size, sizeof size, "%d", b);
    snprintf(title, sizeof title,
             "data parallel, per-GPU batch %d, H %d (speedup: against %s's epoch time)", b, H,
             "dp_x1");
    table_header(title);
    snprintf(name[0], 64, "epoch_graph_H%d", H);
    snprintf(name[1], 64, "dp_x1_H%d", H);
    snprintf(name[2], 64, "dp_x%d_H%d", N, H);
    snprintf(name[3], 64, "dp_x%d_buckets%d_H%d", N, K, H);
    snprintf(name[4], 64, "linear_x%d_H%d", N, H);
    snprintf(name[5], 64, "step_x1_H%d", H);
    snprintf(name[6], 64, "allreduce_x%d_H%d", N, H);
    snprintf(name[7], 64, "exposed_x%d_H%d", N, H);
    snprintf(name[8], 64, "exposed_x%d_buckets%d_H%d", N, K, H);
    snprintf(name[9], 64, "nccl_allreduce_x%d_H%d", N, H);
    snprintf(name[10], 64, "allreduce_in_step_x%d_H%d", N, H);
    snprintf(name[11], 64, "dp_x%d_sym_H%d", N, H);
    snprintf(name[12], 64, "dp_x%d_buckets%d_sym_H%d", N, K, H);
    snprintf(name[13], 64, "allreduce_x%d_sym_H%d", N, H);
    snprintf(name[14], 64, "exposed_x%d_sym_H%d", N, H);
    snprintf(name[15], 64, "exposed_x%d_buckets%d_sym_H%d", N, K, H);
    snprintf(name[16], 64, "nccl_allreduce_x%d_sym_H%d", N, H);
    snprintf(name[17], 64, "allreduce_in_step_x%d_sym_H%d", N, H);
    double img_opt = images_per_s(n_train, opt.median_ms),
           img1 = images_per_s(n_train, one.train.median_ms);
    double base = one.train.median_ms;
    dp_row(o, gpu, name[0], "ceiling", size, opt.median_ms, img_opt, "img/s", name[0], img_opt,
           base);
    dp_row(o, gpu, name[1], "step", size, one.train.median_ms, img1, "img/s", name[0], img_opt,
           base);
    for (int i = 0; i < 4; i++) { /* plain, buckets, and the same in symmetric memory */
        const DpBenchResult *r = i == 0 ? &plain : i == 1 ? &buckets : i == 2 ? &sym : &sym_buckets;
        int row = i == 0 ? 2 : i == 1 ? 3 : i == 2 ? 11 : 12;
        if (i == 0 ? N > 1 : i == 1 ? K > 0 : S && (i == 2 || K > 0))
            dp_row(o, gpu, name[row], i == 1 ? "optimized" : "step", size, r->train.median_ms,
                   images_per_s(n_train, r->train.median_ms), "img/s", name[4], N * img1, base);
    }
    dp_row(o, gpu, name[5], "ceiling", size, one.step_ms, one.step_ms, "ms", name[5], one.step_ms,
           0.0);
    dp_row(o, gpu, name[6], "step", size, alone, alone, "ms", name[5], one.step_ms, 0.0);
    if (S)
        dp_row(o, gpu, name[13], "step", size, alone_sym, alone_sym, "ms", name[5], one.step_ms,
               0.0);
    for (int i = 0; i < 4; i++) {
        const DpBenchResult *r = i == 0 ? &plain : i == 1 ? &buckets : i == 2 ? &sym : &sym_buckets;
        int row = i == 0 ? 7 : i == 1 ? 8 : i == 2 ? 14 : 15;
        if (i == 0 || (i == 1 && K > 0) || (S && (i == 2 || K > 0)))
            dp_row(o, gpu, name[row], i == 1 ? "optimized" : "step", size, r->exposed_ms,
                   r->exposed_ms, "ms", name[5], one.step_ms, 0.0);
    }
    if (N > 1) {
        double bus = dp_busbw_gbs(bytes, alone, N), bus_step = dp_busbw_gbs(bytes, plain.ar_ms, N);
        dp_row(o, gpu, name[9], "ceiling", size, alone, bus, "GB/s", name[9], bus, 0.0);
        dp_row(o, gpu, name[10], "step", size, plain.ar_ms, bus_step, "GB/s", name[9], bus, 0.0);
    }
    if (S && alone_sym > 0.0) {
        double bus = dp_busbw_gbs(bytes, alone_sym, N),
               bus_step = dp_busbw_gbs(bytes, sym.ar_ms, N);
        dp_row(o, gpu, name[16], "ceiling", size, alone_sym, bus, "GB/s", name[16], bus, 0.0);
        dp_row(o, gpu, name[17], "step", size, sym.ar_ms, bus_step, "GB/s", name[16], bus, 0.0);
    }

    printf("  gradient %.2f MB; its all-reduce alone %.4f ms (algbw %.1f GB/s, busbw %.1f GB/s = "
           "algbw x 2(N-1)/N)",
           bytes / 1e6, alone, gbs((double)bytes, alone), dp_busbw_gbs(bytes, alone, N));
    if (K) printf(", in %d pieces %.4f ms", K, alone_pieces);
    if (alone_sym > 0.0)
        printf("; in symmetric memory %.4f ms (busbw %.1f GB/s)", alone_sym,
               dp_busbw_gbs(bytes, alone_sym, N));
    printf("\n  in the step (GPU 0): all-reduce %.4f ms, exposed %.4f ms without buckets",
           plain.ar_ms, plain.exposed_ms);
    if (K) printf(", %.4f ms with %d", buckets.exposed_ms, K);
    printf("; a step on one GPU %.4f ms: the all-reduce is %.0f%% of it\n", one.step_ms,
           one.step_ms > 0.0 ? 100.0 * alone / one.step_ms : 0.0);
    if (N > 1 && one.train.median_ms > 0.0) {
        printf("  %d GPUs: %.2fx the images/s of one without buckets", N,
               one.train.median_ms / plain.train.median_ms);
        if (K) printf(", %.2fx with %d buckets", one.train.median_ms / buckets.train.median_ms, K);
        if (S && sym.train.median_ms > 0.0)
            printf("; in symmetric memory %.2fx", one.train.median_ms / sym.train.median_ms);
        if (S && K && sym_buckets.train.median_ms > 0.0)
            printf(" and %.2fx", one.train.median_ms / sym_buckets.train.median_ms);
        printf(" (target >= 1.8 at per-GPU batch >= 1024)\n");
    }
    if (K && one.step_ms > 0.0 && alone >= 0.1 * one.step_ms)
        printf("  communication >= 10%% of the step: buckets %s (epoch %.3f ms against %.3f ms "
               "without)\n",
               buckets.train.median_ms < plain.train.median_ms ? "faster" : "NOT faster",
               buckets.train.median_ms, plain.train.median_ms);
    for (int i = 0; i < 5; i++) {
        const DpBenchResult *r = i == 0   ? &one
                                 : i == 1 ? &plain
                                 : i == 2 ? &buckets
                                 : i == 3 ? &sym
                                          : &sym_buckets;
        if (r->train.diverged_epoch)
            printf("  %s diverged in epoch %d: its accuracy means nothing (its time does)\n",
                   i == 0 ? "dp_x1"
                          : name[i == 1   ? 2
                                 : i == 2 ? 3
                                 : i == 3 ? 11
                                          : 12],
                   r->train.diverged_epoch);
    }

    /* accuracy at per-GPU batch 256: N GPUs against one GPU at the same global batch */
    if (b == 256) {
        TrainResult ref = N > 1 ? dp_bench_one_gpu(d, n_train, N * b, H, p0, o->seed, gpu) : opt;
        for (int i = 0; i < (K ? 2 : 1); i++) {
            const DpBenchResult *r = i == 0 ? &plain : &buckets;
            char what[96];
            snprintf(what, sizeof what, "%s vs epoch_graph accuracy", i == 0 ? name[2] : name[3]);
            double apart = fabs(r->train.accuracy - ref.accuracy);
            if (r->train.epochs >= 10)
                failed += !report_check(what, size, apart, 0.3);
            else
                printf("  %s: %.2f%% vs %.2f%% (batch %d, %d epochs)\n", what, r->train.accuracy,
                       ref.accuracy, N * b, r->train.epochs);
        }
    }
    free(p0);
    return failed;
}

/* --bench (--gpus N, or a launcher's ranks). */
static int dp_bench(const Options *o, const DeviceInfo *info, const Data *d)
{
    static const int DEFAULT_SIZES[][2] = {{256, 1024}, {1024, 1024}, {4096, 1024},
                                           {256, 4096}, {1024, 4096}, {4096, 4096}};
    const int N = dp_world_gpus();
    int n = o->nsizes ? o->nsizes : 6, sizes[CLI_MAX_SIZES][2], failed = 0, traced = n - 1;
    for (int i = 0; i < n; i++) {
        sizes[i][0] = o->nsizes ? (int)o->sizes[i].dim[0] : DEFAULT_SIZES[i][0];
        sizes[i][1] = o->nsizes ? (o->sizes[i].ndims > 1 ? (int)o->sizes[i].dim[1] : FLAGS.hidden)
                                : DEFAULT_SIZES[i][1];
        if (sizes[i][0] == DP_TIMELINE_BATCH && sizes[i][1] == DP_TIMELINE_HIDDEN) traced = i;
        if ((long long)sizes[i][0] * N > 60000)
            cli_fail(
                &SPEC,
                "-n %d: a per-GPU batch of %d on %d GPUs is more than the 60000 training images",
                sizes[i][0], sizes[i][0], N);
    }
    FILE *tl = NULL;
    if (FLAGS.timeline && dp_is_rank0()) {
        tl = fopen(FLAGS.timeline, "w");
        if (!tl) cli_fail(&SPEC, "--timeline: cannot write '%s'", FLAGS.timeline);
        fprintf(tl, "# gpu\t%s\tgpus\t%d\tbatch\t%d\thidden\t%d\tbuckets\t%d\tform\t%s\n",
                info->name, N, sizes[traced][0], sizes[traced][1], dp_buckets(),
                DP_WORLD.ranks ? "ranks" : "process");
        timeline_write_header(tl);
    }
    DpComm all, one;
    dp_comm_open(&all, FLAGS.gpus);
    dp_print_nccl(&all);
    if (N > 1) dp_comm_open_single(&one);
    for (int i = 0; i < n; i++)
        failed += dp_bench_size(o, info, d, &all, N > 1 ? &one : &all, sizes[i][0], sizes[i][1],
                                FLAGS.timeline && i == traced, i == traced ? tl : NULL);
    if (N > 1) dp_comm_destroy(&one);
    dp_comm_destroy(&all);
    if (tl) {
        if (fclose(tl) != 0) {
            fprintf(stderr, "error writing timeline file '%s'\n", FLAGS.timeline);
            exit(1);
        }
        printf("timeline of two steps at per-GPU batch %d, H %d written to %s\n", sizes[traced][0],
               sizes[traced][1], FLAGS.timeline);
    }
    return failed;
}

#endif /* HAVE_NCCL */

#endif
