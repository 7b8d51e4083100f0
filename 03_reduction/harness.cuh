/* The check and the benchmark of a table of sum versions, shared by chapters 03 and 04,
 * with CUB's DeviceReduce::Sum as the ceiling measured in the same run on the same input.
 * Kept apart from kernels.cuh so that including the kernels does not pull in CUB. */
#ifndef CH03_HARNESS_CUH
#define CH03_HARNESS_CUH

#include <cub/device/device_reduce.cuh>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "common/versions.h"
#include "kernels.cuh"
#include "reference.h"

typedef Version<ReduceLauncher> ReduceVersion;

/* ---- the ceiling: CUB ---------------------------------------------------------------- */

/* CUB's temporary storage, allocated once outside the timed region (reduce_cub_init). */
static void *reduce_cub_temp = NULL;
static size_t reduce_cub_temp_bytes = 0;

static inline void reduce_cub_init(int max_n)
{
    size_t bytes = 0;
    CUDA_CHECK(cub::DeviceReduce::Sum(NULL, bytes, (const float *)NULL, (float *)NULL, max_n));
    if (bytes <= reduce_cub_temp_bytes) return;
    if (reduce_cub_temp) CUDA_CHECK(cudaFree(reduce_cub_temp));
    CUDA_CHECK(cudaMalloc(&reduce_cub_temp, bytes));
    reduce_cub_temp_bytes = bytes;
}

static inline void reduce_cub_free(void)
{
    if (reduce_cub_temp) CUDA_CHECK(cudaFree(reduce_cub_temp));
    reduce_cub_temp = NULL;
    reduce_cub_temp_bytes = 0;
}

static inline void reduce_launch_cub(const float *in, int n, float *out, const ReduceWorkspace *ws)
{
    (void)ws;
    size_t bytes = reduce_cub_temp_bytes;
    CUDA_CHECK(cub::DeviceReduce::Sum(reduce_cub_temp, bytes, in, out, n));
    CHECK_LAUNCH();
}

static const ReduceVersion REDUCE_CUB = {"cub", "ceiling", reduce_launch_cub};

/* ---- check ---------------------------------------------------------------------------- */

typedef struct {
    float *in, *out;
    ReduceWorkspace ws;
} ReduceBuffers;

/* Runs one version on the device input; returns its result (the output was poisoned). */
static inline float reduce_run_once(const ReduceVersion *v, const ReduceBuffers *b, int n)
{
    float result;
    poison_device(b->out, sizeof(float));
    v->launch(b->in, n, b->out, &b->ws);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(&result, b->out, sizeof(float), cudaMemcpyDeviceToHost));
    return result;
}

/* Checks the selected versions (and CUB, when all are selected) on one kind of input;
 * tol < 0 means "the derived tolerance of n", tol = 0 an exact match. Returns failures. */
static inline int reduce_check_input(const ReduceVersion *versions, int count, const Options *o,
                                     const ReduceBuffers *b, const float *x, int n,
                                     const char *input, double tol)
{
    double ref = reduce_ref_sum(x, (size_t)n), abs_sum = reduce_ref_abs_sum(x, (size_t)n);
    char size[32], what[64];
    snprintf(size, sizeof size, "%d", n);
    CUDA_CHECK(cudaMemcpy(b->in, x, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    int failures = 0;
    for (int v = 0; v <= count; v++) {
        const ReduceVersion *ver = v < count ? &versions[v] : &REDUCE_CUB;
        if (v < count ? !kernel_selected(o, ver->name) : o->kernel != NULL) continue;
        float got = reduce_run_once(ver, b, n);
        snprintf(what, sizeof what, "%s %s", ver->name, input);
        double err = tol == 0.0 ? (isfinite(got) ? fabs((double)got - ref) : INFINITY)
                                : reduce_rel_error(got, ref, abs_sum);
        failures += !report_check(what, size, err, tol);
    }
    return failures;
}

/* Validates every selected version at size n on two fresh inputs:
 *  random   mixed signs in [-1, 1): |gpu - ref| / sum|x| <= reduce_tolerance(n) (reference.h);
 *  integers in [-16, 16]: every partial sum is exact, so gpu == ref (tolerance 0), which
 *           catches a lost or doubled element at any size. */
static inline int reduce_check_size(const ReduceVersion *versions, int count, const Options *o,
                                    int n)
{
    float *x = (float *)xmalloc((size_t)n * sizeof(float));
    ReduceBuffers b;
    CUDA_CHECK(cudaMalloc(&b.in, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b.out, sizeof(float)));
    reduce_workspace_alloc(&b.ws, n);
    reduce_cub_init(n);

    unsigned long long seed = o->seed + (unsigned long long)n;
    reduce_fill_random(x, (size_t)n, seed);
    int failures =
        reduce_check_input(versions, count, o, &b, x, n, "random", reduce_tolerance((size_t)n));
    reduce_fill_integers(x, (size_t)n, seed + 1);
    failures += reduce_check_input(versions, count, o, &b, x, n, "integers", 0.0);

    reduce_workspace_free(&b.ws);
    CUDA_CHECK(cudaFree(b.in));
    CUDA_CHECK(cudaFree(b.out));
    free(x);
    return failures;
}

/* Prints the rule of the checks, then checks every size of the list (or of -n); `what`
 * names the checked quantity in the heading ("" or "the sum "). Returns failures. */
static inline int reduce_check_sizes(const ReduceVersion *versions, int count, const Options *o,
                                     const long long *sizes, int nsizes, const char *what)
{
    printf("\ncheck %s(seed %llu): random inputs: |gpu - ref| / sum|x| against "
           "(2 sqrt(n) + 3 log2(n + 1) + 16) * 2^-24;\n"
           "integer inputs: every partial sum is exact, so |gpu - ref| must be 0\n",
           what, o->seed);
    int failures = 0;
    for (int s = 0; s < size_count(o, nsizes); s++)
        failures += reduce_check_size(versions, count, o, (int)size_at(o, sizes, s));
    return failures;
}

/* ---- bench ---------------------------------------------------------------------------- */

#define REDUCE_MAX_ROTATION 64

/* Copies of the input the timed loop rotates through, so that together they are at least
 * three times the L2 cache: each run then reads DRAM, not what the previous run left in L2
 * (below n = 3 * L2 / 64 / 4 bytes even 64 copies fit in L2: such small sums time L2). */
static inline int reduce_rotation_buffers(long long n, const DeviceInfo *info)
{
    double bytes = (double)n * sizeof(float);
    int copies = (int)ceil(3.0 * info->l2_bytes / bytes);
    return copies < 1 ? 1 : (copies > REDUCE_MAX_ROTATION ? REDUCE_MAX_ROTATION : copies);
}

/* Device bytes the bench of size n needs: the rotated inputs plus the workspace. */
static inline double reduce_bench_bytes(long long n, const DeviceInfo *info)
{
    return (reduce_rotation_buffers(n, info) + 0.1) * (double)n * sizeof(float) + 64e6;
}

typedef struct {
    ReduceLauncher launch;
    float *in[REDUCE_MAX_ROTATION];
    int copies, next, n;
    float *out;
    ReduceWorkspace ws;
} ReduceTimed;

static inline void reduce_timed_run(void *p)
{
    ReduceTimed *t = (ReduceTimed *)p;
    t->launch(t->in[t->next], t->n, t->out, &t->ws);
    t->next = (t->next + 1) % t->copies;
}

static inline void reduce_table_header(const char *title)
{
    printf("\n%s\n", title);
    printf("%-16s %-9s %-10s %10s %9s %8s %8s %8s\n", "version", "role", "size", "time (ms)",
           "GB/s", "% of CUB", "step", "total");
}

/* One line: step = speedup over the line before, total = over the first version. */
static inline void reduce_table_row(const BenchRow *r, double prev_ms, double first_ms)
{
    char step[16] = "", total[16] = "";
    if (prev_ms > 0.0) snprintf(step, sizeof step, "%.2fx", prev_ms / r->time_ms);
    if (first_ms > 0.0) snprintf(total, sizeof total, "%.2fx", first_ms / r->time_ms);
    printf("%-16s %-9s %-10s %10.4f %9.1f %7.1f%% %8s %8s\n", r->kernel, r->role, r->size,
           r->time_ms, r->value, pct_of_ceiling(r), step, total);
}

static inline void reduce_emit(const Options *o, const DeviceInfo *info, const char *chapter,
                               const BenchRow *r, double prev_ms, double first_ms)
{
    reduce_table_row(r, prev_ms, first_ms);
    if (o->csv && csv_append(o->csv, info->name, chapter, r) != 0) exit(1);
}

/* Times CUB and every selected version at size n (bytes read / time = GB/s). */
static inline void reduce_bench_size(const ReduceVersion *versions, int count, const Options *o,
                                     const DeviceInfo *info, const char *chapter, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    ReduceTimed t;
    memset(&t, 0, sizeof t);
    t.n = n;
    t.copies = reduce_rotation_buffers(n, info);
    float *x = (float *)xmalloc(bytes);
    reduce_fill_random(x, (size_t)n, o->seed);
    for (int c = 0; c < t.copies; c++) {
        CUDA_CHECK(cudaMalloc(&t.in[c], bytes));
        CUDA_CHECK(cudaMemcpy(t.in[c], x, bytes, cudaMemcpyHostToDevice));
    }
    free(x);
    CUDA_CHECK(cudaMalloc(&t.out, sizeof(float)));
    reduce_workspace_alloc(&t.ws, n);
    reduce_cub_init(n);

    char size[32], title[160];
    snprintf(size, sizeof size, "%d", n);
    t.launch = REDUCE_CUB.launch;
    float cub_ms = time_median_ms(reduce_timed_run, &t, 3, o->reps);
    double cub_gbs = gbs((double)bytes, cub_ms);
    snprintf(title, sizeof title,
             "sum of n = %d floats: GB/s = 4n bytes read / time; %d input cop%s "
             "rotated (L2 %.0f MB); ceiling = CUB",
             n, t.copies, t.copies == 1 ? "y" : "ies", info->l2_bytes / 1e6);
    reduce_table_header(title);
    double first_ms = 0.0, prev_ms = 0.0;
    for (int v = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name)) continue;
        t.launch = versions[v].launch;
        float ms = time_median_ms(reduce_timed_run, &t, 3, o->reps);
        if (first_ms == 0.0) first_ms = ms;
        BenchRow r = {versions[v].name,       versions[v].role, size,  ms,
                      gbs((double)bytes, ms), "GB/s",           "cub", cub_gbs};
        reduce_emit(o, info, chapter, &r, prev_ms, first_ms);
        prev_ms = ms;
    }
    BenchRow c = {"cub", "ceiling", size, cub_ms, cub_gbs, "GB/s", "cub", cub_gbs};
    reduce_emit(o, info, chapter, &c, 0.0, first_ms);

    for (int k = 0; k < t.copies; k++) CUDA_CHECK(cudaFree(t.in[k]));
    CUDA_CHECK(cudaFree(t.out));
    reduce_workspace_free(&t.ws);
}

#endif
