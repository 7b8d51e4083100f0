/* Chapter 05 driver, the benchmark: sets of operands used in turn so that every run starts
 * from DRAM, the median time within a budget, and bench_shape, which times a table of
 * versions on one shape against its ceiling and prints a table row and a CSV row for each.
 * The operand sets hold bytes and the timing calls a function, so versions with other
 * input types can use them with a run function of their own. */
#ifndef CH05_DRIVER_BENCH_CUH
#define CH05_DRIVER_BENCH_CUH

#include <math.h>
#include <string.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "05_matmul_tiled/driver/driver.cuh"

#define CHAPTER "05_matmul_tiled"

/* Skip a version at a size when one run would take longer than this (predicted 8x its
 * time at half the size): the naive kernels at 8192 would otherwise dominate the run. */
static const double SKIP_RUN_MS = 1000.0;
/* Total timed budget per version and size: fewer repetitions for the slow versions. */
static const double BUDGET_MS = 1500.0;

/* Several copies of A, B, C used in turn, so that together they exceed the L2 and each
 * run starts with its operands in DRAM, as in a real program's stream of GEMMs. */
#define MAX_SETS 64
typedef struct {
    int nsets, next;
    void *A[MAX_SETS], *B[MAX_SETS], *C[MAX_SETS];
} OperandSets;

/* How many sets of set_bytes make three times the L2 (at least 1, at most MAX_SETS). */
static int rotation_sets(double set_bytes, const DeviceInfo *info)
{
    int want = (int)ceil(3.0 * info->l2_bytes / set_bytes);
    return want < 1 ? 1 : (want > MAX_SETS ? MAX_SETS : want);
}

/* Every set's A, B and C are device copies of the first a_bytes, b_bytes and c_bytes of
 * host_a, host_b and host_c. */
static void operand_sets_alloc(OperandSets *r, const DeviceInfo *info, const void *host_a,
                               size_t a_bytes, const void *host_b, size_t b_bytes,
                               const void *host_c, size_t c_bytes)
{
    r->nsets = rotation_sets((double)(a_bytes + b_bytes + c_bytes), info);
    r->next = 0;
    for (int i = 0; i < r->nsets; i++) {
        CUDA_CHECK(cudaMalloc(&r->A[i], a_bytes));
        CUDA_CHECK(cudaMalloc(&r->B[i], b_bytes));
        CUDA_CHECK(cudaMalloc(&r->C[i], c_bytes));
        CUDA_CHECK(cudaMemcpy(r->A[i], host_a, a_bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(r->B[i], host_b, b_bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(r->C[i], host_c, c_bytes, cudaMemcpyHostToDevice));
    }
}

static void operand_sets_free(OperandSets *r)
{
    for (int i = 0; i < r->nsets; i++) {
        CUDA_CHECK(cudaFree(r->A[i]));
        CUDA_CHECK(cudaFree(r->B[i]));
        CUDA_CHECK(cudaFree(r->C[i]));
    }
}

/* The set the next run uses, and the rotation moves on. */
static int operand_sets_next(OperandSets *r)
{
    int i = r->next;
    r->next = (i + 1) % r->nsets;
    return i;
}

/* Warm-up before the timed runs: about WARM_MS of runs, shared among the versions of a shape.
 * A long product moves the GPU's clock as the chip heats and draws power (at 8192^3 one bf16
 * product draws most of the 700 W). */
static const double WARM_MS = 200.0;

/* The timed runs of a shape's versions are split into BENCH_ROUNDS rounds, each version in
 * turn (forward, then backward), so that every version, the ceiling included, sees the same
 * history of power and clocks. Timed one after the other instead, the version that happens to
 * run about 0.7 s into the load meets the power controller's dip (on an H100 at 8192 x 8192 x
 * 32768 the SM clock falls from about 1.4 to 1.05 GHz for some 0.2 s) and loses 15%. */
#define BENCH_ROUNDS 5
/* Before each batch of a version's timed runs the ceiling (the last version) runs untimed for
 * about BENCH_SETTLE_MS, so that every batch starts from the state the ceiling's stream
 * leaves, not from its neighbour's: in one round of every tensor-core version, the versions
 * right after slow ones (which draw less power) ran 10% faster than in a round of their peers
 * alone. */
#define BENCH_SETTLE_MS 10.0

/* Chooses which version run(ctx) runs next. */
typedef void (*SelectFn)(void *ctx, int version);

/* Median time of each of n versions of one product, ms[v] for version v, the last one the
 * ceiling: one untimed run of each tells how many repetitions fit budget_ms (3 to max_reps),
 * then warm_ms of warm-up shared among them and the rounds above, each batch after settle_ms
 * of the ceiling. */
static void time_in_rounds(TimedFn run, SelectFn select, void *ctx, int n, int max_reps,
                           double budget_ms, double warm_ms, double settle_ms, float *ms)
{
    int *reps = (int *)xmalloc(sizeof(int) * (size_t)n),
        *done = (int *)xmalloc(sizeof(int) * (size_t)n);
    float **times = (float **)xmalloc(sizeof(float *) * (size_t)n);
    int settle = 1;
    for (int v = 0; v < n; v++) {
        select(ctx, v);
        float once = time_median_ms(run, ctx, 1, 1);
        double per_run = once > 1e-3f ? once : 1e-3f;
        int r = (int)(budget_ms / per_run), warm = (int)ceil(warm_ms / n / per_run);
        reps[v] = r < 3 ? 3 : (r > max_reps ? max_reps : r);
        done[v] = 0;
        times[v] = (float *)xmalloc(sizeof(float) * (size_t)reps[v]);
        time_runs_ms(run, ctx, warm < 1 ? 1 : (warm > 128 ? 128 : warm), 0, NULL);
        if (v == n - 1) settle = (int)ceil(settle_ms / per_run);
    }
    settle = settle < 1 ? 1 : (settle > 64 ? 64 : settle);
    for (int round = 0; round < BENCH_ROUNDS; round++)
        for (int i = 0; i < n; i++) {
            int v = round % 2 ? n - 1 - i : i;
            int upto = reps[v] * (round + 1) / BENCH_ROUNDS;
            if (upto == done[v]) continue;
            if (v != n - 1 && settle_ms > 0.0) {
                select(ctx, n - 1);
                time_runs_ms(run, ctx, settle, 0, NULL);
            }
            select(ctx, v);
            time_runs_ms(run, ctx, 0, upto - done[v], times[v] + done[v]);
            done[v] = upto;
        }
    for (int v = 0; v < n; v++) {
        ms[v] = median_ms(times[v], reps[v]);
        free(times[v]);
    }
    free(times);
    free(done);
    free(reps);
}

static double tflops(Shape s, double ms)
{
    return 2.0 * s.M * s.N * (double)s.K / (ms * 1e-3) / 1e12;
}

/* Every time this run measured, for the summaries that look across shapes (the shape
 * sweep's, shape_sweep.cuh). */
typedef struct {
    Shape s;
    const char *kernel;
    double ms;
} BenchRecord;
#define BENCH_LOG_MAX 4096
static BenchRecord bench_log[BENCH_LOG_MAX];
static int bench_log_count = 0;

static void bench_log_add(Shape s, const char *kernel, double ms)
{
    if (bench_log_count == BENCH_LOG_MAX) return;
    BenchRecord r = {s, kernel, ms};
    bench_log[bench_log_count++] = r;
}

/* The latest time of `kernel` on s in this run, or 0 if it was not timed there. */
static double bench_log_ms(Shape s, const char *kernel)
{
    for (int i = bench_log_count - 1; i >= 0; i--) {
        const BenchRecord *r = &bench_log[i];
        if (r->s.M == s.M && r->s.N == s.N && r->s.K == s.K && !strcmp(r->kernel, kernel))
            return r->ms;
    }
    return 0.0;
}

/* The fp32 versions' operands: every set's A, B and C are the same uniform [-1, 1) floats. */
typedef struct {
    Shape s;
    OperandSets sets;
    SgemmLauncher launch;
} BenchCtx;

static void bench_alloc(BenchCtx *b, Shape s, const DeviceInfo *info, unsigned long long seed)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    b->s = s;
    size_t biggest = a_n > b_n ? a_n : b_n;
    biggest = biggest > c_n ? biggest : c_n;
    float *host = (float *)xmalloc(biggest * sizeof(float));
    fill_uniform(host, biggest, -1.0f, 1.0f, seed);
    operand_sets_alloc(&b->sets, info, host, a_n * sizeof(float), host, b_n * sizeof(float), host,
                       c_n * sizeof(float));
    free(host);
}

static void run_version(void *p)
{
    BenchCtx *b = (BenchCtx *)p;
    int i = operand_sets_next(&b->sets);
    b->launch(b->s.M, b->s.N, b->s.K, ALPHA, (const float *)b->sets.A[i],
              (const float *)b->sets.B[i], BETA, (float *)b->sets.C[i]);
}

/* The versions bench_shape times, in the order of the table; the context's launcher is the
 * chosen one's. */
typedef struct {
    BenchCtx b;
    const SgemmVersion *versions;
    int *timed;
} BenchRounds;

static void select_version(void *p, int which)
{
    BenchRounds *r = (BenchRounds *)p;
    r->b.launch = r->versions[r->timed[which]].launch;
}

static void run_selected(void *p) { run_version(&((BenchRounds *)p)->b); }

/* Whether bench_shape leaves version v out: predicted from the half size (last_ms[v], see
 * below) to take over SKIP_RUN_MS a run. */
static int bench_predicted_slow(const double *last_ms, int v)
{
    return last_ms && last_ms[v] * 8.0 > SKIP_RUN_MS;
}

/* Times every selected version of the table on one shape against its ceiling, the table's
 * last version (cuBLAS), in the same rounds (time_in_rounds).
 * last_ms[v] carries each version's time from the previous (half-size) square, or 0. */
static void bench_shape(const Options *o, const DeviceInfo *info, Shape s,
                        const SgemmVersion *versions, int count, double *last_ms)
{
    char size[48];
    shape_str(s, size, sizeof size);
    BenchRounds r;
    r.versions = versions;
    bench_alloc(&r.b, s, info, o->seed);
    r.timed = (int *)xmalloc(sizeof(int) * (size_t)count);
    float *ms = (float *)xmalloc(sizeof(float) * (size_t)count);
    int n = 0;
    for (int v = 0; v < count - 1; v++)
        if (kernel_selected(o, versions[v].name) && version_fits(&versions[v]) &&
            !bench_predicted_slow(last_ms, v))
            r.timed[n++] = v;
    r.timed[n++] = count - 1;
    time_in_rounds(run_selected, select_version, &r, n, o->reps, BUDGET_MS, WARM_MS,
                   BENCH_SETTLE_MS, ms);
    const SgemmVersion *cublas = &versions[count - 1];
    float cublas_ms = ms[n - 1];
    double ceiling = tflops(s, cublas_ms);
    char title[160];
    snprintf(title, sizeof title,
             "sgemm %s: TFLOP/s = 2MNK / time; ceiling = cuBLAS SGEMM fp32 "
             "(%d buffer sets)",
             size, r.b.sets.nsets);
    table_header(title);
    double base_ms = 0.0;
    for (int v = 0, t = 0; v < count - 1; v++) {
        if (!kernel_selected(o, versions[v].name) || !version_fits(&versions[v])) continue;
        if (bench_predicted_slow(last_ms, v)) {
            printf("%-24s skipped: about %.0f ms a run predicted from the half size\n",
                   versions[v].name, last_ms[v] * 8.0);
            last_ms[v] = 1e30;
            continue;
        }
        float v_ms = ms[t++];
        bench_log_add(s, versions[v].name, v_ms);
        if (last_ms) last_ms[v] = v_ms;
        if (v == 0) base_ms = v_ms;
        BenchRow row = {versions[v].name, versions[v].role, size,         v_ms,
                        tflops(s, v_ms),  "TFLOP/s",        cublas->name, ceiling};
        report_row(o->csv, info->name, CHAPTER, &row, base_ms);
    }
    bench_log_add(s, cublas->name, cublas_ms);
    BenchRow c = {cublas->name, cublas->role, size,         cublas_ms,
                  ceiling,      "TFLOP/s",    cublas->name, ceiling};
    report_row(o->csv, info->name, CHAPTER, &c, base_ms);
    free(ms);
    free(r.timed);
    operand_sets_free(&r.b.sets);
}

#endif
