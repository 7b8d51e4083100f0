/* Chapter 05 driver, the shape sweep (--sweep; its shapes are in shape_sweep.h).
 * --check --sweep runs the versions sgemm_best chooses from, and best itself, on every
 * sweep shape. --bench --sweep times best, hopper and cuBLAS on every sweep shape that this
 * run has not timed yet, says for each what best runs there and how long the model
 * predicted, and ends with a summary over every shape this run timed best and cuBLAS on
 * (the chapter's own bench shapes included): the geometric mean of best's % of cuBLAS, the
 * worst shape, the same for the shapes with M*N*K >= 2^30, and how far the model's
 * predictions were off. The CSV rows are the usual ones; plot_extra.py draws the sweep
 * from them. */
#ifndef CH05_DRIVER_SHAPE_SWEEP_CUH
#define CH05_DRIVER_SHAPE_SWEEP_CUH

#include <math.h>
#include <string.h>

#include "05_matmul_tiled/driver/bench.cuh"
#include "05_matmul_tiled/driver/check.cuh"
#include "05_matmul_tiled/driver/driver.cuh"
#include "05_matmul_tiled/kernels.cuh"
#include "05_matmul_tiled/driver/shape_sweep.h"

/* What the sweep checks (the versions sgemm_best runs, itself, cuBLAS on the large
 * shapes) and what it times. */
static const char *const SWEEP_CHECKED[] = {"hopper",  "hopper_small", "splitk", "splitk_8x8",
                                            "streamk", "thin_m",       "thin_n", "thin_n_8x8",
                                            "gemv",    "best",         "cublas"};
static const char *const SWEEP_TIMED[] = {"hopper", "best", "cublas"};
#define SWEEP_NAMES(a) (int)(sizeof a / sizeof a[0])

/* The versions of the table named in `names` (every version when --kernel picks one), in
 * table order, so that the ceiling stays last. */
static int sweep_versions(const Options *o, const SgemmVersion *versions, int count,
                          const char *const *names, int nnames, SgemmVersion *out)
{
    int n = 0;
    for (int v = 0; v < count; v++) {
        int named = o->kernel != NULL;
        for (int i = 0; i < nnames && !named; i++) named = !strcmp(versions[v].name, names[i]);
        if (named) out[n++] = versions[v];
    }
    return n;
}

static Shape sweep_shape(const int (*shapes)[3], int i)
{
    Shape s = {shapes[i][0], shapes[i][1], shapes[i][2]};
    return s;
}

/* The bytes of A, B and C of the largest sweep shape (main checks that they fit). */
static double sweep_largest_bytes(unsigned long long seed)
{
    int shapes[SWEEP_MAX_SHAPES][3];
    int n = sweep_shapes(seed, shapes);
    double largest = 0.0;
    for (int i = 0; i < n; i++) {
        double bytes = shape_bytes(sweep_shape(shapes, i));
        largest = bytes > largest ? bytes : largest;
    }
    return largest;
}

static int check_sweep(const Options *o, const SgemmVersion *versions, int count)
{
    int shapes[SWEEP_MAX_SHAPES][3];
    int n = sweep_shapes(o->seed, shapes);
    SgemmVersion table[64];
    int t = sweep_versions(o, versions, count, SWEEP_CHECKED, SWEEP_NAMES(SWEEP_CHECKED), table);
    printf("\nshape sweep (seed %llu): %d shapes, the versions sgemm_best runs and best itself\n",
           o->seed, n);
    int failures = 0;
    for (int i = 0; i < n; i++) failures += check_shape(o, sweep_shape(shapes, i), table, t);
    return failures;
}

/* Whether a later record holds the same kernel on the same shape (the summary counts the
 * latest time of each shape). */
static int sweep_superseded(int i)
{
    for (int j = i + 1; j < bench_log_count; j++)
        if (!strcmp(bench_log[j].kernel, bench_log[i].kernel) &&
            bench_log[j].s.M == bench_log[i].s.M && bench_log[j].s.N == bench_log[i].s.N &&
            bench_log[j].s.K == bench_log[i].s.K)
            return 1;
    return 0;
}

/* Geometric mean and worst of `kernel`'s % of cuBLAS over the shapes of this run that
 * timed both, optionally only those with M*N*K >= 2^30. Returns the number of shapes. */
static int sweep_stats(const char *kernel, int large_only, double *geomean, double *worst,
                       Shape *worst_shape, int *below90, int *below50)
{
    int n = 0;
    double log_sum = 0.0;
    *worst = 1e30;
    *below90 = *below50 = 0;
    for (int i = 0; i < bench_log_count; i++) {
        const BenchRecord *r = &bench_log[i];
        if (strcmp(r->kernel, kernel) || sweep_superseded(i)) continue;
        if (large_only && (double)r->s.M * r->s.N * r->s.K < 1073741824.0) continue;
        double cublas_ms = bench_log_ms(r->s, "cublas");
        if (cublas_ms <= 0.0 || r->ms <= 0.0) continue;
        double pct = 100.0 * cublas_ms / r->ms;
        log_sum += log(pct);
        n++;
        if (pct < 90.0) (*below90)++;
        if (pct < 50.0) (*below50)++;
        if (pct < *worst) *worst = pct, *worst_shape = r->s;
    }
    *geomean = n ? exp(log_sum / n) : 0.0;
    return n;
}

static void sweep_summary_line(const char *kernel, int large_only)
{
    double geomean, worst;
    Shape w = {0, 0, 0};
    int below90, below50;
    int n = sweep_stats(kernel, large_only, &geomean, &worst, &w, &below90, &below50);
    if (n == 0) return;
    char size[48];
    printf("  %-7s %-16s %3d shapes: geometric mean %6.1f%% of cuBLAS, worst %6.1f%% (%s), "
           "%d below 90%%, %d below 50%%\n",
           kernel, large_only ? "M*N*K >= 2^30" : "all", n, geomean, worst,
           shape_str(w, size, sizeof size), below90, below50);
}

/* Times best, hopper and cuBLAS on every sweep shape not timed yet, then the summary. */
static void bench_sweep(const Options *o, const DeviceInfo *info, const SgemmVersion *versions,
                        int count)
{
    int shapes[SWEEP_MAX_SHAPES][3];
    int n = sweep_shapes(o->seed, shapes);
    SgemmVersion table[64];
    int t = sweep_versions(o, versions, count, SWEEP_TIMED, SWEEP_NAMES(SWEEP_TIMED), table);
    printf("\nshape sweep (seed %llu): %d shapes; best, hopper and cuBLAS on each one this run "
           "has not timed yet\n",
           o->seed, n);
    double ratio_log = 0.0;
    int ratios = 0;
    for (int i = 0; i < n; i++) {
        Shape s = sweep_shape(shapes, i);
        if (bench_log_ms(s, "best") > 0.0 && bench_log_ms(s, "cublas") > 0.0) continue;
        /* The bench's buffers come from cudaMalloc: 16-byte aligned, so N alone decides. */
        SgemmPlan plan = sgemm_best_plan(s.M, s.N, s.K, BETA, s.N % 4 == 0);
        char what[160];
        sgemm_model_describe(sgemm_best_machine(), &plan, what, sizeof what);
        bench_shape(o, info, s, table, t, NULL);
        double ms = bench_log_ms(s, "best");
        printf("  best ran: %s; predicted %.1f us, measured %.1f us\n", what, plan.us, ms * 1e3);
        if (ms > 0.0 && (double)s.M * s.N * s.K >= 1073741824.0) {
            ratio_log += log(ms * 1e3 / plan.us);
            ratios++;
        }
    }
    printf("\nshape sweep summary (every shape this run timed best and cuBLAS on)\n");
    sweep_summary_line("best", 0);
    sweep_summary_line("best", 1);
    sweep_summary_line("hopper", 0);
    sweep_summary_line("hopper", 1);
    if (ratios)
        printf("  the model: best's measured time / predicted time, geometric mean over the "
               "sweep's %d shapes with M*N*K >= 2^30: %.2f\n",
               ratios, exp(ratio_log / ratios));
}

#endif
