/* Chapter 01 driver: vector add. --check validates every version against a double-precision
 * CPU sum; --bench times them against the device-to-device copy bandwidth, then compares
 * the CPU with the GPU across sizes, with and without the host-device copies. */
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "common/versions.h"
#include "kernels.cuh"
#include "solutions/solutions.cuh"

#define CHAPTER "01_vector_add"

static const Version<VectorAddLauncher> VERSIONS[] = {
    {"naive", "naive", launch_naive},
    {"grid_stride", "step", launch_grid_stride},
    {"float4", "optimized", launch_float4},
    /* the exercises' answers (solutions/) */
    {"ex1_block_32", "exercise", launch_ex1_block_32},
    {"ex2_one_block_per_sm", "exercise", launch_ex2_one_block_per_sm},
    {"ex3_unroll4", "exercise", launch_ex3_unroll4},
    {"ex4_two_pass", "exercise", launch_ex4_two_pass},
    {"ex5_float4x2", "exercise", launch_ex5_float4x2},
};
#define NVERSIONS VERSION_COUNT(VERSIONS)
static NameList KERNEL_NAMES; /* VERSIONS' names, for --kernel and --help */

/* 1, sizes that are not multiples of 4 (float4 tail) or of the block, primes, the bench size. */
static const long long CHECK_SIZES[] = {1, 3, 4, 255, 1021, 1025, 4097, 1000003, 1LL << 28};
static const long long BENCH_SIZE = 1LL << 28;

static const ProgramSpec SPEC = {
    "vector_add",
    "Chapter 01: c = a + b on n floats, naive / grid-stride / float4, against copy bandwidth.",
    "number of floats, up to 2147483647 (check default: 1,3,4,255,1021,1025,4097,1000003,2^28;\n"
    "                   bench default: the ladder at 2^28, the CPU/GPU sweep 2^10..2^28)",
    NULL,
    KERNEL_NAMES.name,
    1,
    2147483647LL,
    NULL,
    NULL};

/* The CPU reference, in double precision. */
static void cpu_add_double(const float *a, const float *b, double *ref, size_t n)
{
    for (size_t i = 0; i < n; i++) ref[i] = (double)a[i] + (double)b[i];
}

/* The CPU version the GPU is raced against: the same float arithmetic as the kernels. */
static void cpu_add_float(const float *a, const float *b, float *c, size_t n)
{
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

typedef struct {
    float *a, *b, *c;
    int n;
    VectorAddLauncher launch;
} Arrays;

static void alloc_device(Arrays *d, int n)
{
    d->n = n;
    CUDA_CHECK(cudaMalloc(&d->a, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d->b, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d->c, (size_t)n * sizeof(float)));
}

static void free_device(Arrays *d)
{
    CUDA_CHECK(cudaFree(d->a));
    CUDA_CHECK(cudaFree(d->b));
    CUDA_CHECK(cudaFree(d->c));
}

/* Validates every selected version at size n on fresh random inputs. Returns failures.
 * Tolerance 2^-24: a + b in float is the exact sum rounded once, so its relative error
 * against the double sum is at most half an ulp. */
static int check_size(const Options *o, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float *a = (float *)xmalloc(bytes), *b = (float *)xmalloc(bytes), *c = (float *)xmalloc(bytes);
    double *ref = (double *)xmalloc((size_t)n * sizeof(double));
    fill_uniform(a, (size_t)n, -1.0f, 1.0f, o->seed + (unsigned long long)n);
    fill_uniform(b, (size_t)n, -1.0f, 1.0f, o->seed + (unsigned long long)n + 1);
    cpu_add_double(a, b, ref, (size_t)n);

    Arrays d;
    alloc_device(&d, n);
    CUDA_CHECK(cudaMemcpy(d.a, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d.b, b, bytes, cudaMemcpyHostToDevice));
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    int failures = 0;
    for (int v = 0; v < NVERSIONS; v++) {
        if (!kernel_selected(o, VERSIONS[v].name)) continue;
        poison_device(d.c, bytes);
        VERSIONS[v].launch(d.a, d.b, d.c, n);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(c, d.c, bytes, cudaMemcpyDeviceToHost));
        double err = max_rel_error(c, ref, (size_t)n, 1e-30, NULL);
        failures += !report_check(VERSIONS[v].name, size, err, 0x1p-24);
    }
    free_device(&d);
    free(a);
    free(b);
    free(c);
    free(ref);
    return failures;
}

static void run_version(void *p)
{
    Arrays *d = (Arrays *)p;
    d->launch(d->a, d->b, d->c, d->n);
}

static void emit(const Options *o, const DeviceInfo *info, const BenchRow *r, double base_ms)
{
    report_row(o->csv, info->name, CHAPTER, r, base_ms);
}

/* The ladder at size n: every version's GB/s (12 bytes per element: two reads, one
 * write) against a device-to-device copy measured now, on this GPU. */
static void bench_ladder(const Options *o, const DeviceInfo *info, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float copy_ms;
    double copy_gbs = copy_bandwidth_gbs(bytes, o->reps, &copy_ms);
    char size[32];
    snprintf(size, sizeof size, "%d", n);

    Arrays d;
    alloc_device(&d, n);
    float *host = (float *)xmalloc(bytes);
    fill_uniform(host, (size_t)n, -1.0f, 1.0f, o->seed);
    CUDA_CHECK(cudaMemcpy(d.a, host, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d.b, host, bytes, cudaMemcpyHostToDevice));
    free(host);

    table_header(
        "vector add: GB/s counts 2 reads + 1 write per element; ceiling = device-to-device copy");
    double base_ms = 0.0;
    for (int v = 0; v < NVERSIONS; v++) {
        if (!kernel_selected(o, VERSIONS[v].name)) continue;
        d.launch = VERSIONS[v].launch;
        float ms = time_median_ms(run_version, &d, 3, o->reps);
        if (v == 0) base_ms = ms;
        BenchRow r = {VERSIONS[v].name,     VERSIONS[v].role, size,       ms,
                      gbs(3.0 * bytes, ms), "GB/s",           "d2d_copy", copy_gbs};
        emit(o, info, &r, base_ms);
    }
    BenchRow c = {"d2d_copy", "ceiling", size, copy_ms, copy_gbs, "GB/s", "d2d_copy", copy_gbs};
    emit(o, info, &c, 0.0);
    free_device(&d);
}

typedef struct {
    Arrays d;
    const float *ha, *hb;
    float *hc;
} CopyRoundTrip;

/* What a first GPU program does end to end: copy the inputs over, add, copy the sum back.
 * Pageable (malloc) host memory, as such a program has; chapter 06 shows pinned memory. */
static void run_with_copies(void *p)
{
    CopyRoundTrip *t = (CopyRoundTrip *)p;
    size_t bytes = (size_t)t->d.n * sizeof(float);
    CUDA_CHECK(cudaMemcpy(t->d.a, t->ha, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->d.b, t->hb, bytes, cudaMemcpyHostToDevice));
    launch_float4(t->d.a, t->d.b, t->d.c, t->d.n);
    CUDA_CHECK(cudaMemcpy(t->hc, t->d.c, bytes, cudaMemcpyDeviceToHost));
}

/* Median wall time of the CPU loop; fewer repetitions for the large sizes. */
static double time_cpu_ms(const float *a, const float *b, float *c, size_t n, int reps)
{
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = 0; r < reps; r++) {
        double t0 = wall_ms();
        cpu_add_float(a, b, c, n);
        t[r] = wall_ms() - t0;
    }
    return median_double(t, reps);
}

/* One size of the CPU-vs-GPU sweep: times in ms, judged against the CPU's time. */
static void bench_cpu_vs_gpu(const Options *o, const DeviceInfo *info, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    CopyRoundTrip t;
    float *ha = (float *)xmalloc(bytes), *hb = (float *)xmalloc(bytes);
    t.hc = (float *)xmalloc(bytes);
    fill_uniform(ha, (size_t)n, -1.0f, 1.0f, o->seed);
    fill_uniform(hb, (size_t)n, -1.0f, 1.0f, o->seed + 1);
    t.ha = ha;
    t.hb = hb;
    alloc_device(&t.d, n);
    t.d.launch = launch_float4;

    int slow_reps = n >= (1 << 24) ? 3 : o->reps;
    double cpu_ms = time_cpu_ms(ha, hb, t.hc, (size_t)n, slow_reps);
    float copies_ms = time_median_ms(run_with_copies, &t, 1, slow_reps);
    CUDA_CHECK(cudaMemcpy(t.d.a, ha, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t.d.b, hb, bytes, cudaMemcpyHostToDevice));
    float kernel_ms = time_median_ms(run_version, &t.d, 3, o->reps);

    char size[32];
    snprintf(size, sizeof size, "%d", n);
    BenchRow rows[3] = {
        {"cpu_loop", "naive", size, cpu_ms, cpu_ms, "ms", "cpu_loop", cpu_ms},
        {"gpu_with_copies", "step", size, copies_ms, copies_ms, "ms", "cpu_loop", cpu_ms},
        {"gpu_kernel_only", "optimized", size, kernel_ms, kernel_ms, "ms", "cpu_loop", cpu_ms},
    };
    for (int i = 0; i < 3; i++) emit(o, info, &rows[i], cpu_ms);
    free_device(&t.d);
    free(ha);
    free(hb);
    free(t.hc);
}

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, VERSIONS, NVERSIONS);
    parse_args(argc, argv, &SPEC, &o);
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    double largest = (double)largest_size(&o, BENCH_SIZE);
    require_device_memory(&SPEC, &info, 3.0 * sizeof(float) * largest, "the three arrays");

    int failures = 0;
    if (o.check) {
        printf("\ncheck (seed %llu): max relative error against a double-precision CPU sum\n",
               o.seed);
        int count = size_count(&o, (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]));
        for (int s = 0; s < count; s++)
            failures += check_size(&o, (int)size_at(&o, CHECK_SIZES, s));
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        if (o.nsizes == 0) {
            bench_ladder(&o, &info, (int)BENCH_SIZE);
        } else {
            for (int s = 0; s < o.nsizes; s++) bench_ladder(&o, &info, (int)o.sizes[s].dim[0]);
        }
        if (o.kernel == NULL) {
            table_header(
                "CPU vs GPU: milliseconds; % ceiling = CPU time / this time; speedup over the CPU");
            if (o.nsizes == 0) {
                for (int e = 10; e <= 28; e += 2) bench_cpu_vs_gpu(&o, &info, 1 << e);
            } else {
                for (int s = 0; s < o.nsizes; s++)
                    bench_cpu_vs_gpu(&o, &info, (int)o.sizes[s].dim[0]);
            }
        }
    }
    return failures ? 1 : 0;
}
