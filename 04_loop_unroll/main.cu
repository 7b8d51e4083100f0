/* Chapter 04 driver: loop unrolling. The sum of n floats (checked and timed against CUB by
 * chapter 03's harness) and a degree-128 polynomial per element, a compute-bound kernel
 * timed against the GPU's FP32 FMA peak. */
#include "03_reduction/harness.cuh"
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/report.h"
#include "kernels.cuh"
#include "reference.h"
#include "solutions/solutions.cuh"

#define CHAPTER "04_loop_unroll"

static const ReduceVersion SUM_VERSIONS[] = {
    {"k2_tree", "naive", unroll_launch_k_tree<2>},
    {"k4_tree", "step", unroll_launch_k_tree<4>},
    {"k8_tree", "step", unroll_launch_k_tree<8>},
    {"k16_tree", "step", unroll_launch_k_tree<16>},
    {"k16_last_warp", "step", unroll_launch_last_warp<16>},
    {"k16_template", "step", unroll_launch_template_block<16>},
    {"gs_u4_rolled", "step", unroll_launch_grid_stride<4, false>},
    {"gs_u1", "step", unroll_launch_grid_stride<1, true>},
    {"gs_u2", "step", unroll_launch_grid_stride<2, true>},
    {"gs_u4", "optimized", unroll_launch_grid_stride<4, true>},
    {"gs_u8", "step", unroll_launch_grid_stride<8, true>},
    {"gs_u16", "step", unroll_launch_grid_stride<16, true>},
    /* the exercises' answers (solutions/) */
    {"ex1_k32_tree", "exercise", ex1_launch_k32_tree},
    {"ex2_gs_u32", "exercise", ex2_launch_gs_u32},
    {"ex4_gs_u4_acc4", "exercise", ex4_launch_gs_u4_acc4},
};
#define NSUM VERSION_COUNT(SUM_VERSIONS)

typedef Version<PolyLauncher> PolyVersion;

static const PolyVersion POLY_VERSIONS[] = {
    {"poly_k1", "naive", unroll_launch_poly<1>},
    {"poly_k2", "step", unroll_launch_poly<2>},
    {"poly_k4", "step", unroll_launch_poly<4>},
    {"poly_k8", "optimized", unroll_launch_poly<8>},
    {"poly_k16", "step", unroll_launch_poly<16>},
    {"poly_k1_full", "step", unroll_launch_poly_full},
    /* the exercises' answers (solutions/) */
    {"ex3_poly_k8_full", "exercise", ex3_launch_poly_k8_full},
    {"ex5_poly_even_odd", "exercise", ex5_launch_poly_even_odd},
    {"ex6_poly_estrin", "exercise", ex6_launch_poly_estrin},
};
#define NPOLY VERSION_COUNT(POLY_VERSIONS)

static NameList KERNEL_NAMES; /* both tables' names, for --kernel and --help */

static const long long CHECK_SIZES[] = {1, 2, 3, 1023, 1025, 999983, 1LL << 24, 1LL << 28};
static const long long BENCH_SIZES[] = {1LL << 28, 1LL << 24};
/* The polynomial's CPU reference costs 128 FMAs per element: checked up to this size. */
static const long long POLY_CHECK_MAX = 1LL << 24;
static const int POLY_BENCH_SIZE = 1 << 24;

static const ProgramSpec SPEC = {
    "loop_unroll",
    "Chapter 04: loop unrolling on the sum of n floats (against CUB) and on a degree-128\n"
    "polynomial per element (against the FP32 FMA peak).",
    "number of floats, up to 2147483647 (check default: 1,2,3,1023,1025,999983,2^24,2^28,\n"
    "                   the polynomial up to 2^24; bench default: the sum at 2^28,2^24,\n"
    "                   the polynomial at 2^24)",
    NULL,
    KERNEL_NAMES.name,
    1,
    2147483647LL,
    NULL,
    NULL};

/* ---- the polynomial ----------------------------------------------------------------- */

static int poly_selected(const Options *o)
{
    if (o->kernel == NULL) return 1;
    for (int v = 0; v < NPOLY; v++)
        if (kernel_selected(o, POLY_VERSIONS[v].name)) return 1;
    return 0;
}

/* The sum runs when --kernel names one of its versions, or nothing of the polynomial's (a
 * ceiling alone, say): a list may name versions of both. */
static int sum_selected(const Options *o)
{
    if (o->kernel == NULL || !poly_selected(o)) return 1;
    for (int v = 0; v < NSUM; v++)
        if (kernel_selected(o, SUM_VERSIONS[v].name)) return 1;
    return 0;
}

static void poly_upload_coefficients(const Options *o, float *c)
{
    unroll_poly_coefficients(c, UNROLL_POLY_DEGREE, o->seed + 7);
    unroll_poly_set_coefficients(c);
}

/* Every selected polynomial version at size n: max_i |y_i - p(x_i)| / sum_j |c_j||x_i|^j
 * against 2 (D + 1) 2^-24 (reference.h says why). */
static int poly_check_size(const Options *o, int n)
{
    float c[UNROLL_POLY_DEGREE + 1];
    poly_upload_coefficients(o, c);
    float *y = (float *)xmalloc((size_t)n * sizeof(float)), *d_y;
    double *ref = (double *)xmalloc((size_t)n * sizeof(double));
    double *scale = (double *)xmalloc((size_t)n * sizeof(double));
    unroll_poly_reference(c, UNROLL_POLY_DEGREE, n, ref, scale);
    CUDA_CHECK(cudaMalloc(&d_y, (size_t)n * sizeof(float)));
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    int failures = 0;
    for (int v = 0; v < NPOLY; v++) {
        if (!kernel_selected(o, POLY_VERSIONS[v].name)) continue;
        poison_device(d_y, (size_t)n * sizeof(float));
        POLY_VERSIONS[v].launch(d_y, n, unroll_poly_step(n));
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(y, d_y, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        failures +=
            !report_check(POLY_VERSIONS[v].name, size, unroll_poly_max_error(y, ref, scale, n),
                          unroll_poly_tolerance(UNROLL_POLY_DEGREE));
    }
    CUDA_CHECK(cudaFree(d_y));
    free(y);
    free(ref);
    free(scale);
    return failures;
}

/* The FP32 peak from the spec sheet's formula: SMs x FP32 lanes per SM x 2 flops per FMA
 * x the peak clock that cudaDevAttrClockRate reports. 64 lanes per SM on sm_60, sm_7x and
 * sm_80; 128 on sm_61, sm_86, sm_89, sm_90 and later. */
static double fma_peak_gflops(const DeviceInfo *info, int *clock_khz)
{
    *clock_khz = current_device_attribute(cudaDevAttrClockRate);
    int lanes = (info->major == 7 || (info->major == 6 && info->minor == 0) ||
                 (info->major == 8 && info->minor == 0))
                    ? 64
                    : 128;
    return (double)info->sms * lanes * 2.0 * (*clock_khz) * 1e3 / 1e9;
}

typedef struct {
    PolyLauncher launch;
    float *y;
    int n;
} PolyTimed;

static void poly_timed_run(void *p)
{
    PolyTimed *t = (PolyTimed *)p;
    t->launch(t->y, t->n, unroll_poly_step(t->n));
}

static void poly_table_header(const char *title)
{
    printf("\n%s\n", title);
    printf("%-16s %-9s %-10s %10s %9s %8s %8s %8s\n", "version", "role", "size", "time (ms)",
           "GFLOP/s", "% peak", "step", "total");
}

static void poly_emit(const Options *o, const DeviceInfo *info, const BenchRow *r, double prev_ms,
                      double first_ms)
{
    char step[16] = "", total[16] = "";
    if (prev_ms > 0.0) snprintf(step, sizeof step, "%.2fx", prev_ms / r->time_ms);
    if (first_ms > 0.0) snprintf(total, sizeof total, "%.2fx", first_ms / r->time_ms);
    printf("%-16s %-9s %-10s %10.4f %9.0f %7.1f%% %8s %8s\n", r->kernel, r->role, r->size,
           r->time_ms, r->value, pct_of_ceiling(r), step, total);
    if (o->csv && csv_append(o->csv, info->name, CHAPTER, r) != 0) exit(1);
}

static void poly_bench_size(const Options *o, const DeviceInfo *info, int n)
{
    float c[UNROLL_POLY_DEGREE + 1];
    poly_upload_coefficients(o, c);
    PolyTimed t;
    t.n = n;
    CUDA_CHECK(cudaMalloc(&t.y, (size_t)n * sizeof(float)));
    int clock_khz;
    double peak = fma_peak_gflops(info, &clock_khz);
    double flops = 2.0 * UNROLL_POLY_DEGREE * (double)n;
    char size[32], title[256];
    snprintf(size, sizeof size, "%d", n);
    snprintf(title, sizeof title,
             "polynomial of degree %d at n = %d points: GFLOP/s = 2 x %d x n / time; "
             "ceiling = FP32 FMA peak (%d SMs, %d MHz from cudaDevAttrClockRate)",
             UNROLL_POLY_DEGREE, n, UNROLL_POLY_DEGREE, info->sms, clock_khz / 1000);
    poly_table_header(title);
    double first_ms = 0.0, prev_ms = 0.0;
    for (int v = 0; v < NPOLY; v++) {
        if (!kernel_selected(o, POLY_VERSIONS[v].name)) continue;
        t.launch = POLY_VERSIONS[v].launch;
        float ms = time_median_ms(poly_timed_run, &t, 3, o->reps);
        if (first_ms == 0.0) first_ms = ms;
        BenchRow r = {POLY_VERSIONS[v].name,
                      POLY_VERSIONS[v].role,
                      size,
                      ms,
                      flops / (ms * 1e6),
                      "GFLOP/s",
                      "fma_peak",
                      peak};
        poly_emit(o, info, &r, prev_ms, first_ms);
        prev_ms = ms;
    }
    BenchRow p = {"fma_peak", "ceiling", size,       flops / (peak * 1e6),
                  peak,       "GFLOP/s", "fma_peak", peak};
    poly_emit(o, info, &p, 0.0, 0.0);
    CUDA_CHECK(cudaFree(t.y));
}

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, SUM_VERSIONS, NSUM);
    name_list_add(&KERNEL_NAMES, POLY_VERSIONS, NPOLY);
    parse_args(argc, argv, &SPEC, &o);
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    int ncheck = size_count(&o, (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]));
    int nbench = size_count(&o, (int)(sizeof BENCH_SIZES / sizeof BENCH_SIZES[0]));
    require_device_memory(&SPEC, &info, reduce_bench_bytes(largest_size(&o, BENCH_SIZES[0]), &info),
                          "the input and its rotated copies");

    int failures = 0;
    if (o.check) {
        if (sum_selected(&o))
            failures +=
                reduce_check_sizes(SUM_VERSIONS, NSUM, &o, CHECK_SIZES,
                                   (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]), "the sum ");
        if (poly_selected(&o)) {
            printf("\ncheck the polynomial (seed %llu): max |gpu - ref| / sum_j |c_j||x|^j against "
                   "2 (D + 1) 2^-24, D = %d\n",
                   o.seed, UNROLL_POLY_DEGREE);
            for (int s = 0; s < ncheck; s++) {
                long long n = size_at(&o, CHECK_SIZES, s);
                if (n <= POLY_CHECK_MAX)
                    failures += poly_check_size(&o, (int)n);
                else
                    printf(
                        "  skip polynomial at size %lld: its CPU reference is checked up to %lld\n",
                        n, POLY_CHECK_MAX);
            }
        }
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        if (sum_selected(&o))
            for (int s = 0; s < nbench; s++)
                reduce_bench_size(SUM_VERSIONS, NSUM, &o, &info, CHAPTER,
                                  (int)size_at(&o, BENCH_SIZES, s));
        if (poly_selected(&o)) {
            if (o.nsizes == 0) poly_bench_size(&o, &info, POLY_BENCH_SIZE);
            for (int s = 0; s < o.nsizes; s++) poly_bench_size(&o, &info, (int)o.sizes[s].dim[0]);
        }
    }
    reduce_cub_free();
    return failures ? 1 : 0;
}
