/* Chapter 05 driver, the tensor-core sweep (--sweep-tc, --sweep-tc-all; its shapes are in
 * tc_sweep.h).
 * --check --sweep-tc runs every version tc_best may run on every sweep shape (wgmma,
 * wgmma_ws, wgmma_ws_128x128, wgmma_persistent, wgmma_cload, wgmma_cluster, wgmma_splitk,
 * mma_pipeline), the padded step, best itself, and cuBLAS on the large shapes, in both input
 * types; then
 * best on operands at addresses TMA refuses (A, then Bt, one element past an aligned one).
 * --bench --sweep-tc times best and cuBLAS on every sweep shape (--sweep-tc-all: every
 * version the check runs, and where K is one TMA refuses, every version again on the shape
 * with K rounded up) that this run has not timed them on yet (the default bench's
 * shapes are in the sweep too), says for each what best runs there and how long the model
 * predicted, and ends with a summary per input type: the geometric mean of best's % of
 * cuBLAS, the worst shape, and the worst among the shapes with M*N*K >= 2^30. The CSV rows
 * are the usual ones; records/tc_calibrate.py fits the model's parameters to those of
 * --sweep-tc-all, with the GPU's numbers from the `tc_machine` lines printed here.
 * Each shape is timed briefly (a warm-up of the GPU on cuBLAS, then a short warm-up and the
 * median of a few runs per version), so that the whole sweep takes minutes, not the bench's
 * quarter of an hour. */
#ifndef CH05_DRIVER_TC_SWEEP_CUH
#define CH05_DRIVER_TC_SWEEP_CUH

#include <math.h>
#include <string.h>

#include "05_matmul_tiled/driver/shape_sweep.cuh"
#include "05_matmul_tiled/driver/tc_driver.cuh"
#include "05_matmul_tiled/driver/tc_sweep.h"

/* The versions checked on every shape (and timed with --sweep-tc-all), less the input type;
 * the ceiling, cuBLAS, is each table's last. */
static const char *const TC_SWEEP_CHECKED[] = {
    "wgmma",         "wgmma_ws",     "wgmma_ws_128x128", "wgmma_persistent", "wgmma_cload",
    "wgmma_cluster", "wgmma_splitk", "mma_pipeline",     "wgmma_padded",     "best",
    "cublas"};
static const char *const TC_SWEEP_TIMED[] = {"best", "cublas"};

/* Before timing a shape, its product runs for about this long (the GPU's clock and power
 * settle where a steady stream of the product holds them: bench.cuh's WARM_MS); then each
 * version gets TC_SWEEP_VERSION_WARM_MS of runs and the median of the runs that fit in
 * TC_SWEEP_BUDGET_MS (3 to TC_SWEEP_MAX_REPS), the versions of a shape timed in rounds
 * (bench.cuh's time_in_rounds). */
#define TC_SWEEP_WARM_MS 100.0
#define TC_SWEEP_VERSION_WARM_MS 10.0
#define TC_SWEEP_BUDGET_MS 40.0
#define TC_SWEEP_MAX_REPS 15
/* the ceiling's untimed runs before each batch (bench.cuh's BENCH_SETTLE_MS) */
#define TC_SWEEP_SETTLE_MS 2.0

/* Whether `name` is `base` in some input type ("wgmma_ws" names wgmma_ws_bf16 and
 * wgmma_ws_tf32, not wgmma_ws_128x128_bf16). */
static int tc_sweep_is(const char *name, const char *base)
{
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (!strcmp(name + n, "_bf16") || !strcmp(name + n, "_tf32"));
}

/* The versions of the table named in `names` (with --kernel: those it selects), in table
 * order, and the ceiling last. */
template <typename T> static int tc_sweep_versions(const Options *o, const TcVersion<T> *versions,
                                                   int count, const char *const *names, int nnames,
                                                   TcVersion<T> *out)
{
    int n = 0;
    for (int v = 0; v < count; v++) {
        int take = v == count - 1;
        if (o->kernel)
            take = take || kernel_selected(o, versions[v].name);
        else
            for (int i = 0; i < nnames && !take; i++)
                take = tc_sweep_is(versions[v].name, names[i]);
        if (take) out[n++] = versions[v];
    }
    return n;
}

/* The bytes of A, B and C as fp32 of the largest sweep shape (main checks that they fit). */
static double tc_sweep_largest_bytes(unsigned long long seed)
{
    int shapes[TC_SWEEP_MAX_SHAPES][3];
    int n = tc_sweep_shapes(seed, shapes);
    double largest = 0.0;
    for (int i = 0; i < n; i++) {
        double bytes = shape_bytes(sweep_shape(shapes, i));
        largest = bytes > largest ? bytes : largest;
    }
    return largest;
}

/* ------------------------------------------------------------------ check */

/* --check --sweep-tc: on each shape the bf16 table's, then the TF32 table's versions (a
 * table that is NULL is left out). */
static int tc_check_sweep(const Options *o, const TcVersion<bf16> *bf16_versions, int nbf16,
                          const TcVersion<float> *tf32_versions, int ntf32)
{
    int shapes[TC_SWEEP_MAX_SHAPES][3];
    int n = tc_sweep_shapes(o->seed, shapes), names = SWEEP_NAMES(TC_SWEEP_CHECKED);
    TcVersion<bf16> tb[64];
    TcVersion<float> tt[64];
    int nb =
        bf16_versions ? tc_sweep_versions(o, bf16_versions, nbf16, TC_SWEEP_CHECKED, names, tb) : 0;
    int nt =
        tf32_versions ? tc_sweep_versions(o, tf32_versions, ntf32, TC_SWEEP_CHECKED, names, tt) : 0;
    printf("\ntensor-core sweep (seed %llu): %d shapes, bf16 then TF32 on each: the versions "
           "tc_best runs,\nthe padded step and best itself\n",
           o->seed, n);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        if (nb) failures += tc_check_shape(o, sweep_shape(shapes, i), tb, nb);
        if (nt) failures += tc_check_shape(o, sweep_shape(shapes, i), tt, nt);
    }
    /* best where a pointer is what TMA refuses: only that operand is copied (shapes below
     * check_ceiling_here's size: cuBLAS is not asked to take the odd addresses) */
    printf("\nA, then Bt, one element past a 16-byte boundary:\n");
    const Shape odd[3] = {{300, 200, 256}, {700, 600, 200}, {2000, 40, 1200}};
    for (int i = 0; i < 3; i++)
        for (int shift = 0; shift < 2; shift++) {
            if (nb) failures += tc_check_shape_at(o, odd[i], tb, nb, shift == 0, shift == 1);
            if (nt) failures += tc_check_shape_at(o, odd[i], tt, nt, shift == 0, shift == 1);
        }
    return failures;
}

/* ------------------------------------------------------------------ bench */

/* best's and the ceiling's times on each shape, for the summary. */
typedef struct {
    Shape s;
    double best_ms, ceiling_ms;
} TcSweepRecord;
typedef struct {
    TcSweepRecord r[TC_SWEEP_MAX_SHAPES];
    int n;
} TcSweepLog;

/* The GPU's numbers the model uses, in the form records/tc_calibrate.py reads. */
template <typename T> static void tc_sweep_print_machine(void)
{
    if (tc_wgmma_unavailable()) return;
    const TcMachine *m = tc_best_machine<T>();
    printf("tc_machine %s sms=%d clock_khz=%ld dram_gbs=%.1f cluster_fit=%d occupancy=",
           TcHost<T>::name(), m->sms,
           lround(m->flops_per_us * 1e3 / TcBestType<T>::FLOPS_PER_CLOCK),
           m->dram_bytes_per_us / 1e3, m->cluster_fit);
    for (int c = 0; c < TC_NCAND; c++) printf("%s%d", c ? "," : "", m->occupancy[c]);
    printf("\n");
}

/* Whether this run has timed every version of the table that can run on s already (the
 * default bench shapes): the sweep keeps those times and does not time them again. */
template <typename T> static int tc_sweep_timed_before(Shape s, const TcVersion<T> *table,
                                                       int count, const T *A, const T *Bt)
{
    for (int v = 0; v < count; v++)
        if (!tc_version_refusal(&table[v], s, A, Bt) && bench_log_ms(s, table[v].name) <= 0.0)
            return 0;
    return 1;
}

/* Times the table's versions on one shape (in rounds, the ceiling among them), a CSV row
 * each, and adds best's and the ceiling's times to records (unless NULL). settle: first run
 * the ceiling for TC_SWEEP_WARM_MS. */
template <typename T> static void tc_sweep_bench_shape(const Options *o, const DeviceInfo *info,
                                                       Shape s, const TcVersion<T> *table,
                                                       int count, TcSweepLog *records, int settle)
{
    const char *best = NULL;
    for (int v = 0; v < count; v++)
        if (tc_sweep_is(table[v].name, "best")) best = table[v].name;
    /* the bench's operands come from cudaMalloc: 16-byte aligned, so K alone decides what
     * TMA refuses */
    const T *aligned = (const T *)(uintptr_t)256;
    if (tc_sweep_timed_before(s, table, count, aligned, aligned)) {
        TcSweepRecord rec = {s, best ? bench_log_ms(s, best) : 0.0,
                             bench_log_ms(s, table[count - 1].name)};
        if (records && records->n < TC_SWEEP_MAX_SHAPES) records->r[records->n++] = rec;
        return;
    }
    char size[48], title[200];
    shape_str(s, size, sizeof size);
    TcBenchCtx<T> b;
    tc_bench_ctx_init(&b, o, info, s);
    const TcVersion<T> *ceiling = &table[count - 1];
    b.v = ceiling;
    if (settle) {
        float once = time_median_ms(tc_run_timed<T>, &b, 0, 1);
        int warm = (int)ceil(TC_SWEEP_WARM_MS / (once > 1e-3f ? once : 1e-3f));
        time_median_ms(tc_run_timed<T>, &b, warm < 400 ? warm : 400, 1);
    }
    const T *a0 = (const T *)b.sets.A[0], *b0 = (const T *)b.sets.B[0];
    float *ms = (float *)xmalloc(sizeof(float) * (size_t)count);
    int n = tc_timed_versions(o, &b, s, table, count); /* the table is --kernel's already */
    int most = o->reps < TC_SWEEP_MAX_REPS ? o->reps : TC_SWEEP_MAX_REPS;
    time_in_rounds(tc_run_timed<T>, tc_select_timed<T>, &b, n, most, TC_SWEEP_BUDGET_MS,
                   TC_SWEEP_VERSION_WARM_MS * n, TC_SWEEP_SETTLE_MS, ms);
    float ceiling_ms = ms[n - 1];
    snprintf(title, sizeof title, "%s GEMM %s (sweep): TFLOP/s = 2MNK / time; ceiling = %s",
             TcHost<T>::name(), size, ceiling->name);
    table_header(title);
    double best_ms = 0.0;
    for (int v = 0, t = 0; v < count; v++) {
        if (b.timed[t] != &table[v]) {
            printf("%-24s skipped: %s\n", table[v].name, tc_version_refusal(&table[v], s, a0, b0));
            continue;
        }
        float v_ms = ms[t++];
        BenchRow r = {table[v].name,   table[v].role, size,          v_ms,
                      tflops(s, v_ms), "TFLOP/s",     ceiling->name, tflops(s, ceiling_ms)};
        report_row(o->csv, info->name, CHAPTER, &r, 0.0);
        bench_log_add(s, table[v].name, v_ms);
        if (table[v].name == best) best_ms = v_ms;
    }
    free(ms);
    free(b.timed);
    if (best_ms > 0.0 && !tc_wgmma_unavailable()) {
        TcPlan p = tc_best_plan_for<T>(s.M, s.N, s.K, BETA, a0, b0);
        char what[200];
        tc_model_describe(&p, what, sizeof what);
        printf("  best ran: %s; predicted %.1f us, measured %.1f us\n", what, p.us, best_ms * 1e3);
    }
    if (records && records->n < TC_SWEEP_MAX_SHAPES) {
        TcSweepRecord rec = {s, best_ms, ceiling_ms};
        records->r[records->n++] = rec;
    }
    operand_sets_free(&b.sets);
}

/* Geometric mean and worst of best's % of cuBLAS, over every shape or (large_only) those
 * with M*N*K >= 2^30. */
static void tc_sweep_summary_line(const char *type, const TcSweepLog *records, int large_only)
{
    int n = 0, below90 = 0, below80 = 0, below50 = 0;
    double log_sum = 0.0, worst = 1e30;
    Shape w = {0, 0, 0};
    for (int i = 0; i < records->n; i++) {
        const TcSweepRecord *r = &records->r[i];
        if (r->best_ms <= 0.0 || r->ceiling_ms <= 0.0) continue;
        if (large_only && (double)r->s.M * r->s.N * r->s.K < 1073741824.0) continue;
        double pct = 100.0 * r->ceiling_ms / r->best_ms;
        log_sum += log(pct);
        n++;
        below90 += pct < 90.0, below80 += pct < 80.0, below50 += pct < 50.0;
        if (pct < worst) worst = pct, w = r->s;
    }
    if (n == 0) return;
    char size[48];
    printf("  best_%s %-16s %3d shapes: geometric mean %6.1f%% of cuBLAS, worst %6.1f%% (%s), "
           "%d below 90%%, %d below 80%%, %d below 50%%\n",
           type, large_only ? "M*N*K >= 2^30" : "all", n, exp(log_sum / n), worst,
           shape_str(w, size, sizeof size), below90, below80, below50);
}

/* The same shape with K rounded up to what TMA accepts in type T: where the sweep's K is
 * not, --sweep-tc-all times every version on this twin too (right after the shape itself,
 * on a warm GPU), so that tc_calibrate.py sees the wgmma kernels on the rows they run on
 * after the padding copy. Its times stay out of the summary. */
template <typename T> static void tc_sweep_bench_twin(const Options *o, const DeviceInfo *info,
                                                      Shape s, const TcVersion<T> *table, int count)
{
    int kp = tc_padded_k<T>(s.K);
    if (kp == s.K) return;
    Shape twin = {s.M, s.N, kp};
    tc_sweep_bench_shape(o, info, twin, table, count, (TcSweepLog *)NULL, 0);
}

/* --bench --sweep-tc: best and cuBLAS (all: every version the check runs, and the twins
 * above) on every shape, bf16 then TF32 (a table that is NULL is left out), then each type's
 * summary. */
static void tc_bench_sweep(const Options *o, const DeviceInfo *info,
                           const TcVersion<bf16> *bf16_versions, int nbf16,
                           const TcVersion<float> *tf32_versions, int ntf32, int all)
{
    int shapes[TC_SWEEP_MAX_SHAPES][3];
    int n = tc_sweep_shapes(o->seed, shapes);
    const char *const *names = all ? TC_SWEEP_CHECKED : TC_SWEEP_TIMED;
    int nnames = all ? SWEEP_NAMES(TC_SWEEP_CHECKED) : SWEEP_NAMES(TC_SWEEP_TIMED);
    TcVersion<bf16> tb[64];
    TcVersion<float> tt[64];
    int nb = bf16_versions ? tc_sweep_versions(o, bf16_versions, nbf16, names, nnames, tb) : 0;
    int nt = tf32_versions ? tc_sweep_versions(o, tf32_versions, ntf32, names, nnames, tt) : 0;
    printf("\ntensor-core sweep (seed %llu): %d shapes, bf16 then TF32 on each; %s\n", o->seed, n,
           all ? "every version tc_best runs, the padded step, best and cuBLAS"
               : "best and cuBLAS");
    if (nb) tc_sweep_print_machine<bf16>();
    if (nt) tc_sweep_print_machine<float>();
    static TcSweepLog rb, rt;
    rb.n = rt.n = 0;
    for (int i = 0; i < n; i++) {
        Shape s = sweep_shape(shapes, i);
        if (nb) tc_sweep_bench_shape(o, info, s, tb, nb, &rb, 1);
        if (nb && all) tc_sweep_bench_twin(o, info, s, tb, nb);
        if (nt) tc_sweep_bench_shape(o, info, s, tt, nt, &rt, 1);
        if (nt && all) tc_sweep_bench_twin(o, info, s, tt, nt);
    }
    printf("\ntensor-core sweep summary (best's time on each shape against cuBLAS's in the same "
           "precision)\n");
    for (int large = 0; large < 2; large++) {
        if (nb) tc_sweep_summary_line("bf16", &rb, large);
        if (nt) tc_sweep_summary_line("tf32", &rt, large);
    }
}

#endif
