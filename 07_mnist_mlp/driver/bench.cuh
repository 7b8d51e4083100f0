/* Chapter 07: --bench. Every trainer's epoch time at a batch size, against PyTorch's
 * fastest configuration in the same precision from the peer CSV (else the cublas trainer);
 * the launches of a step one by one for the rows that have them; each trainer against the
 * one its row names in `vs` (optimized against cublas): epoch time and final accuracy. */
#ifndef CH07_BENCH_CUH
#define CH07_BENCH_CUH

#include "common/report.h"
#include "07_mnist_mlp/driver/data.cuh"
#include "07_mnist_mlp/driver/epochs.cuh"
#include "07_mnist_mlp/driver/flags.cuh"
#include "07_mnist_mlp/driver/trainer_table.cuh"

#define CHAPTER "07_mnist_mlp"

/* The precision of a PyTorch row of the peer CSV: torch_<config> is fp32,
 * torch_<config>_tf32 and torch_<config>_bf16 the others (peer/torch_reference.py's names). */
static const char *peer_precision(const char *kernel)
{
    size_t n = strlen(kernel);
    if (n > 5 && !strcmp(kernel + n - 5, "_tf32")) return "tf32";
    if (n > 5 && !strcmp(kernel + n - 5, "_bf16")) return "bf16";
    return "fp32";
}

/* Splits a CSV line (without quoted fields) in place into at most max fields; returns
 * how many. */
static int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    for (char *tok = strtok(line, ",\n"); tok && n < max; tok = strtok(NULL, ",\n"))
        fields[n++] = tok;
    return n;
}

/* PyTorch's fastest configuration at this batch size in this precision (NULL: any) from the
 * peer CSV: its epoch time (0 if there is none) and its name into name[len]. */
static double peer_fastest(const char *path, int batch, const char *precision, char *name,
                           size_t len)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    double best = 0.0;
    name[0] = '\0';
    if (!f) return 0.0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *fields[11];
        if (csv_split(line, fields, 11) != 11 || strcmp(fields[1], CHAPTER) ||
            strncmp(fields[2], "torch_", 6) || atoi(fields[4]) != batch)
            continue;
        if (precision && strcmp(peer_precision(fields[2]), precision)) continue;
        double ms = atof(fields[5]);
        if (ms > 0.0 && (best == 0.0 || ms < best)) best = ms, snprintf(name, len, "%s", fields[2]);
    }
    fclose(f);
    return best;
}

/* The test accuracy a run named `impl` reached in its last epoch at this batch size, from
 * the epoch CSV (PyTorch's runs append theirs there too), or -1. */
static double epoch_csv_accuracy(const char *path, const char *impl, int batch, int *epochs)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    double acc = -1.0;
    if (!f) return acc;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *fields[8];
        if (csv_split(line, fields, 8) == 8 && !strcmp(fields[1], impl) &&
            atoi(fields[3]) == batch && atoi(fields[4]) >= *epochs)
            *epochs = atoi(fields[4]), acc = atof(fields[6]);
    }
    fclose(f);
    return acc;
}

/* Each trainer against PyTorch's fastest configuration in its own precision, and the
 * tensor-core trainers also against PyTorch's fastest in any precision: epoch time, and
 * (after 10 epochs at batch 256) the final accuracy within 0.3 points. Returns the number
 * of failed accuracy checks. */
static int bench_against_peer(int batch, const TrainResult *res)
{
    const Flags *f = &FLAGS;
    char any_name[64], name[64], what[120], size[32];
    double any_ms = peer_fastest(f->peer, batch, NULL, any_name, sizeof any_name);
    int failed = 0;
    snprintf(size, sizeof size, "%d", batch);
    if (any_ms <= 0.0) return 0;
    for (int k = 0; k < NIMPLS; k++) {
        if (res[k].median_ms <= 0.0 || strcmp(IMPLS[k].role, "optimized")) continue;
        double ms = peer_fastest(f->peer, batch, IMPLS[k].extra.precision, name, sizeof name);
        if (ms <= 0.0) continue;
        printf("  %s: %.2fx faster than PyTorch's fastest %s configuration (%s, %.2f ms)",
               IMPLS[k].name, ms / res[k].median_ms, IMPLS[k].extra.precision, name, ms);
        if (strcmp(name, any_name))
            printf("; %.2fx its fastest in any precision (%s, %.2f ms)", any_ms / res[k].median_ms,
                   any_name, any_ms);
        printf("\n");
        int epochs = 0;
        double acc = epoch_csv_accuracy(f->epoch_csv, name, batch, &epochs);
        if (acc < 0.0) continue;
        snprintf(what, sizeof what, "%s vs %s accuracy", IMPLS[k].name, name);
        if (res[k].epochs >= 10 && epochs >= 10 && batch == 256)
            failed += !report_check(what, size, fabs(res[k].accuracy - acc), 0.3);
        else
            printf("  %s: %.2f%% vs %.2f%% (%d and %d epochs)\n", what, res[k].accuracy, acc,
                   res[k].epochs, epochs);
    }
    return failed;
}

/* A step's launches timed one by one (median of --reps runs each), to see where a step's
 * time goes: the family says what they are and runs each alone. */
typedef struct {
    Trainer *t;
    int stage;
} StageCtx;

static void run_stage(void *p)
{
    StageCtx *c = (StageCtx *)p;
    c->t->impl->launch->stages->run(c->t, c->stage);
}

static void stage_csv_row(const char *path, const char *gpu, int batch, const char *impl,
                          const char *stage, double us)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "cannot open %s for appending\n", path);
        exit(1);
    }
    if (ftell(f) == 0) fprintf(f, "gpu,batch,impl,launch,us\n");
    fprintf(f, "%s,%d,%s,%s,%.3f\n", gpu, batch, impl, stage, us);
    fclose(f);
}

static void stage_times(Trainer *t, int reps, double *us)
{
    const StepStages *stages = t->impl->launch->stages;
    if (stages->count > MAX_STAGES) {
        fprintf(stderr, "internal error: trainer %s has more than %d launches to time\n",
                t->impl->name, MAX_STAGES);
        exit(1);
    }
    if (stages->measure) {
        stages->measure(t, us);
        return;
    }
    CUDA_CHECK(cudaMemset(t->cursor, 0, sizeof(int)));
    for (int k = 0; k < stages->count; k++) {
        StageCtx c = {t, k};
        us[k] = 1e3 * time_median_ms(run_stage, &c, 3, reps);
    }
}

/* Epochs each trainer is timed for: the slow ones need fewer for a stable median. The
 * host-fed `fed` can run its first epochs slower than the rest, so the fused trainers get
 * five; those that run an epoch as one launch (a graph, or one kernel) all of them. */
static int bench_epochs(const Impl *impl, int epochs)
{
    if (epoch_in_one_launch(impl)) return epochs;
    if (!strcmp(impl->role, "naive") || !impl->launch->fused) return epochs < 2 ? epochs : 2;
    return epochs < 5 ? epochs : 5;
}

/* A step of trainer k in the epoch graph: its epoch time over its steps, in us. */
static double step_in_epoch_us(const TrainResult *res, int k, int n_train, int batch)
{
    return 1e3 * res[k].median_ms / ((n_train + batch - 1) / batch);
}

/* Trainer k's launches one by one, and its step in the epoch graph, into the stage CSV. */
static void stage_csv_rows(const DeviceInfo *info, int batch, int n_train, const TrainResult *res,
                           double (*stage_us)[MAX_STAGES], int k)
{
    const StepStages *stages = IMPLS[k].launch->stages;
    if (!FLAGS.stage_csv || stage_us[k][0] <= 0.0) return;
    for (int st = 0; st < stages->count; st++)
        stage_csv_row(FLAGS.stage_csv, info->name, batch, IMPLS[k].name, stages->names[st],
                      stage_us[k][st]);
    stage_csv_row(FLAGS.stage_csv, info->name, batch, IMPLS[k].name, "step_in_epoch_graph",
                  step_in_epoch_us(res, k, n_train, batch));
}

/* Trainer a against trainer b (the one a's row names in `vs`): their launches side by
 * side (when both were timed, launch for launch the same), their epoch times, and their
 * accuracy. The targets: within 1.5x of b's time and 0.3 points of its accuracy in the same
 * precision (optimized against cublas); a tensor-core trainer against the fp32 trainer it
 * comes from, at least 3x faster and within 0.2 points. Returns 1 if the accuracy check
 * failed. */
static int bench_versus(const Options *o, int batch, int n_train, const char *size,
                        const TrainResult *res, double (*stage_us)[MAX_STAGES], int a, int b)
{
    const StepStages *stages = IMPLS[a].launch->stages;
    int lower = strcmp(IMPLS[a].extra.precision, IMPLS[b].extra.precision) != 0;
    if (stage_us[a][0] > 0.0 && stage_us[b][0] > 0.0 &&
        stages->names == IMPLS[b].launch->stages->names) {
        printf("\none step, launch by launch (us, median of %d single launches), batch %d\n",
               o->reps, batch);
        printf("%-18s %12s %12s\n", "launch", IMPLS[a].name, IMPLS[b].name);
        for (int st = 0; st < stages->count; st++)
            printf("%-18s %12.2f %12.2f\n", stages->names[st], stage_us[a][st], stage_us[b][st]);
        const int pair[2] = {a, b};
        for (int i = 0; i < 2; i++) {
            int k = pair[i];
            double sum = 0.0;
            for (int st = 0; st < stages->count; st++) sum += stage_us[k][st];
            printf("  %s: the launches add up to %.1f us; a step of the epoch took %.1f us\n",
                   IMPLS[k].name, sum, step_in_epoch_us(res, k, n_train, batch));
        }
    }
    int failed = 0;
    if (res[a].median_ms > 0.0 && res[b].median_ms > 0.0) {
        const char *target = lower                               ? " (target <= 1/3)"
                             : !strcmp(IMPLS[b].role, "ceiling") ? " (target <= 1.5)"
                                                                 : "";
        printf("  %s / %s epoch time %.2fx%s\n", IMPLS[a].name, IMPLS[b].name,
               res[a].median_ms / res[b].median_ms, target);
        /* Same seed, data and order: only the GEMMs' rounding differs (and for a tensor-core
         * trainer the precision of their operands), so after 10 epochs the two must agree within
         * 0.3 points (0.2 for a tensor-core trainer), checked at the default batch of 256. */
        double apart = fabs(res[a].accuracy - res[b].accuracy), limit = lower ? 0.2 : 0.3;
        char what[80];
        snprintf(what, sizeof what, "%s vs %s accuracy", IMPLS[a].name, IMPLS[b].name);
        if (res[a].epochs >= 10 && batch == 256)
            failed = !report_check(what, size, apart, limit);
        else
            printf("  %s: %.2f points apart\n", what, apart);
    }
    return failed;
}

static int bench_batch(const Options *o, const DeviceInfo *info, const Data *d, int batch,
                       int hidden)
{
    const Flags *f = &FLAGS;
    int n_train = f->train_size < d->train.count ? f->train_size : d->train.count;
    MlpLayout l = mlp_layout(IDX_PIXELS, hidden);
    float *p0 = (float *)xmalloc(l.total * sizeof(float));
    mlp_init(p0, &l, o->seed);
    TrainResult res[NIMPLS];
    double stage_us[NIMPLS][MAX_STAGES];
    memset(res, 0, sizeof res);
    memset(stage_us, 0, sizeof stage_us);
    printf("\nbatch %d, hidden %d, %d training images, lr %g, momentum %g, %s\n", batch, hidden,
           n_train, learning_rate(batch), f->momentum, d->name);
    for (int k = 0; k < NIMPLS; k++) {
        if (!kernel_selected(o, IMPLS[k].name)) continue;
        char why[200];
        if (impl_unsupported(&IMPLS[k], hidden, batch, why, sizeof why)) {
            printf("  %s skipped: %s\n", IMPLS[k].name, why);
            continue;
        }
        Trainer t;
        trainer_create(&t, &IMPLS[k], &d->train, n_train, &d->test, hidden, batch, d->mean, d->std,
                       o->seed);
        trainer_set_params(&t, p0, (float)learning_rate(batch), (float)f->momentum);
        res[k] = train(&t, bench_epochs(&IMPLS[k], f->epochs), info->name, d->name, f->epoch_csv);
        if (epoch_in_one_launch(&IMPLS[k]) && IMPLS[k].launch->stages)
            stage_times(&t, o->reps, stage_us[k]);
        trainer_destroy(&t);
        stage_csv_rows(info, batch, n_train, res, stage_us, k);
    }
    int naive = -1, cublas = impl_index("cublas");
    for (int k = 0; k < NIMPLS && naive < 0; k++)
        if (!strcmp(IMPLS[k].role, "naive")) naive = k;
    char size[32], title[240];
    snprintf(size, sizeof size, "%d", batch);
    snprintf(
        title, sizeof title,
        "epoch time (ms), batch %d: %% ceiling = the ceiling's time / this time (above 100: "
        "faster); ceiling = PyTorch's fastest configuration in the trainer's precision, else the "
        "cublas trainer",
        batch);
    table_header(title);
    double base = naive >= 0 ? res[naive].median_ms : 0.0;
    for (int k = 0; k < NIMPLS; k++) {
        if (res[k].median_ms <= 0.0) continue;
        char ceiling[64];
        double ceiling_ms =
            peer_fastest(f->peer, batch, IMPLS[k].extra.precision, ceiling, sizeof ceiling);
        if (ceiling_ms <= 0.0)
            snprintf(ceiling, sizeof ceiling, "cublas"),
                ceiling_ms = cublas >= 0 ? res[cublas].median_ms : 0.0;
        BenchRow r = {IMPLS[k].name,    IMPLS[k].role, size,    res[k].median_ms,
                      res[k].median_ms, "ms",          ceiling, ceiling_ms};
        report_row(o->csv, info->name, CHAPTER, &r, base);
    }
    for (int k = 0; k < NIMPLS; k++)
        if (res[k].median_ms > 0.0)
            printf("  %-12s test accuracy after %2d epochs: %6.2f%%\n", IMPLS[k].name,
                   res[k].epochs, res[k].accuracy);
    int failed = 0;
    for (int k = 0; k < NIMPLS; k++) {
        int vs = IMPLS[k].extra.vs ? impl_index(IMPLS[k].extra.vs) : -1;
        if (vs >= 0) failed += bench_versus(o, batch, n_train, size, res, stage_us, k, vs);
    }
    failed += bench_against_peer(batch, res);
    free(p0);
    return failed;
}

#endif
