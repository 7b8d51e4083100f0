/* Chapter 02 driver: thread indexing on a matrix. --check validates every matrix add against
 * a double-precision CPU sum and every transpose against an exact CPU transpose; --bench
 * times both families against the device-to-device copy bandwidth measured in the same run. */
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "common/versions.h"
#include "kernels.cuh"
#include "reference.h"
#include "solutions/solutions.cuh"

#define CHAPTER "02_thread_indexing"

typedef Version<MatrixAddLauncher> AddVersion;
typedef Version<TransposeLauncher> TransposeVersion;

/* Each family starts with its naive version: the speedups are against it. */
static const AddVersion ADD_VERSIONS[] = {
    {"add_1d_columns", "naive", launch_add_1d_columns},
    {"add_2d_grid_1d_block", "step", launch_add_2d_grid_1d_block},
    {"add_2d_32x8", "step", launch_add_2d<32, 8>},
    {"add_2d_32x32", "step", launch_add_2d<32, 32>},
    {"add_2d_16x16", "step", launch_add_2d<16, 16>},
    {"add_2d_8x32", "step", launch_add_2d<8, 32>},
    {"add_2d_128x2", "step", launch_add_2d<128, 2>},
    {"add_2d_swapped_32x8", "step", launch_add_2d_swapped<32, 8>},
    {"add_float4", "optimized", launch_add_float4},
    /* the exercises' answers (solutions/) */
    {"ex1_add_2d_256x1", "exercise", launch_ex1_add_2d_256x1},
    {"ex4_add_flat", "exercise", launch_ex4_add_flat},
};
#define NADD VERSION_COUNT(ADD_VERSIONS)

static const TransposeVersion TRANSPOSE_VERSIONS[] = {
    {"transpose_naive", "naive", launch_transpose_naive},
    {"transpose_smem", "step", launch_transpose_smem<32, 0, 32>},
    {"transpose_smem_padded", "step", launch_transpose_smem<32, 1, 32>},
    {"transpose_smem_32x8", "step", launch_transpose_smem<32, 1, 8>},
    {"transpose_tile64", "optimized", launch_transpose_smem<64, 1, 8>},
    /* the exercises' answers (solutions/) */
    {"ex2_transpose_32x16", "exercise", launch_ex2_transpose_32x16},
    {"ex3_transpose_tile64_nopad", "exercise", launch_ex3_transpose_tile64_nopad},
    {"ex5_transpose_float4_read", "exercise", launch_ex5_transpose_float4_read},
    {"ex6_transpose_pipelined", "exercise", launch_ex6_transpose_pipelined},
};
#define NTRANSPOSE VERSION_COUNT(TRANSPOSE_VERSIONS)

static NameList KERNEL_NAMES; /* both tables' names, for --kernel and --help */

typedef struct {
    int nx, ny;
} MatrixSize;

/* 1x1, shapes that are not multiples of any block side or of 4 (float4 rows start
 * unaligned), single rows and columns, a very flat matrix, and the bench size. */
static const MatrixSize CHECK_SIZES[] = {{1, 1},    {7, 13},    {33, 17},  {1000, 1},
                                         {1, 1000}, {257, 129}, {4097, 3}, {8192, 8192}};
static const MatrixSize BENCH_SIZE = {8192, 8192};

/* 65535 keeps every grid dimension within its limit (gridDim.y <= 65535 in
 * add_2d_grid_1d_block) and 99999999999999 out at parse time. */
static const ProgramSpec SPEC = {
    "thread_indexing",
    "Chapter 02: matrix add and transpose with different thread mappings, against copy bandwidth.",
    "matrix sizes NXxNY (NX columns, NY rows) or N for NxN, each side up to 65535\n"
    "                   (check default: 1x1,7x13,33x17,1000x1,1x1000,257x129,4097x3,8192x8192;\n"
    "                   bench default: 8192x8192)",
    NULL,
    KERNEL_NAMES.name,
    2,
    65535,
    NULL,
    NULL};

static MatrixSize to_matrix_size(const ProblemSize *p)
{
    MatrixSize m = {(int)p->dim[0], p->ndims == 2 ? (int)p->dim[1] : (int)p->dim[0]};
    return m;
}

static size_t elements(MatrixSize m) { return (size_t)m.nx * (size_t)m.ny; }

typedef struct {
    float *a, *b, *c;
    int nx, ny;
    MatrixAddLauncher add;
    TransposeLauncher transpose;
} Matrices;

static void alloc_device(Matrices *d, MatrixSize m)
{
    size_t bytes = elements(m) * sizeof(float);
    d->nx = m.nx;
    d->ny = m.ny;
    CUDA_CHECK(cudaMalloc(&d->a, bytes));
    CUDA_CHECK(cudaMalloc(&d->b, bytes));
    CUDA_CHECK(cudaMalloc(&d->c, bytes));
}

static void free_device(Matrices *d)
{
    CUDA_CHECK(cudaFree(d->a));
    CUDA_CHECK(cudaFree(d->b));
    CUDA_CHECK(cudaFree(d->c));
}

static int any_selected_add(const Options *o)
{
    for (int v = 0; v < NADD; v++)
        if (kernel_selected(o, ADD_VERSIONS[v].name)) return 1;
    return 0;
}

static int any_selected_transpose(const Options *o)
{
    for (int v = 0; v < NTRANSPOSE; v++)
        if (kernel_selected(o, TRANSPOSE_VERSIONS[v].name)) return 1;
    return 0;
}

/* Copies the GPU result back and compares it with ref; returns 1 if it passes. */
static int compare(const char *name, const char *size, const float *d_out, float *h_out,
                   const double *ref, size_t n, double tol)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    return report_check(name, size, max_rel_error(h_out, ref, n, 1e-30, NULL), tol);
}

/* Validates every selected version at one size on fresh random inputs; returns failures.
 * Matrix add, tolerance 2^-24: a + b in float is the exact sum rounded once, at most half
 * an ulp from the double sum. Transpose, tolerance 0: it only moves floats, so every
 * element must come back bit for bit. */
static int check_size(const Options *o, MatrixSize m)
{
    size_t n = elements(m), bytes = n * sizeof(float);
    float *a = (float *)xmalloc(bytes), *b = (float *)xmalloc(bytes), *c = (float *)xmalloc(bytes);
    double *ref = (double *)xmalloc(n * sizeof(double));
    unsigned long long seed =
        o->seed + (unsigned long long)m.nx * 65536ULL + (unsigned long long)m.ny;
    fill_uniform(a, n, -1.0f, 1.0f, seed);
    fill_uniform(b, n, -1.0f, 1.0f, seed + 1);

    Matrices d;
    alloc_device(&d, m);
    CUDA_CHECK(cudaMemcpy(d.a, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d.b, b, bytes, cudaMemcpyHostToDevice));
    char size[32];
    snprintf(size, sizeof size, "%dx%d", m.nx, m.ny);
    int failures = 0;

    ch02_add_reference(a, b, ref, m.nx, m.ny);
    for (int v = 0; v < NADD; v++) {
        if (!kernel_selected(o, ADD_VERSIONS[v].name)) continue;
        poison_device(d.c, bytes);
        ADD_VERSIONS[v].launch(d.a, d.b, d.c, m.nx, m.ny);
        failures += !compare(ADD_VERSIONS[v].name, size, d.c, c, ref, n, 0x1p-24);
    }
    ch02_transpose_reference(a, ref, m.nx, m.ny);
    for (int v = 0; v < NTRANSPOSE; v++) {
        if (!kernel_selected(o, TRANSPOSE_VERSIONS[v].name)) continue;
        poison_device(d.c, bytes);
        TRANSPOSE_VERSIONS[v].launch(d.a, d.c, m.nx, m.ny);
        failures += !compare(TRANSPOSE_VERSIONS[v].name, size, d.c, c, ref, n, 0.0);
    }
    free_device(&d);
    free(a);
    free(b);
    free(c);
    free(ref);
    return failures;
}

static void run_add(void *p)
{
    Matrices *d = (Matrices *)p;
    d->add(d->a, d->b, d->c, d->nx, d->ny);
}

static void run_transpose(void *p)
{
    Matrices *d = (Matrices *)p;
    d->transpose(d->a, d->c, d->nx, d->ny);
}

/* The ceiling of a family: a device-to-device copy that moves as many bytes (read +
 * written) as one run of the family's kernels, measured now, on this GPU. */
static BenchRow copy_ceiling(const Options *o, const char *name, double traffic_bytes,
                             const char *size)
{
    float ms;
    double rate = copy_bandwidth_gbs((size_t)(traffic_bytes / 2.0), o->reps, &ms);
    BenchRow r = {name, "ceiling", size, ms, rate, "GB/s", "d2d_copy", rate};
    return r;
}

/* Copies n random floats in [-1, 1) to the device buffer dst. */
static void upload_uniform(float *dst, size_t n, unsigned long long seed)
{
    float *host = (float *)xmalloc(n * sizeof(float));
    fill_uniform(host, n, -1.0f, 1.0f, seed);
    CUDA_CHECK(cudaMemcpy(dst, host, n * sizeof(float), cudaMemcpyHostToDevice));
    free(host);
}

/* Fills the two input matrices with random values. */
static void fill_inputs(const Options *o, Matrices *d, MatrixSize m)
{
    upload_uniform(d->a, elements(m), o->seed);
    upload_uniform(d->b, elements(m), o->seed + 1);
}

/* The matrix add table: GB/s counts 2 reads + 1 write of 4 bytes per element. */
static void bench_add(const Options *o, const DeviceInfo *info, MatrixSize m, const char *size)
{
    double traffic = 3.0 * sizeof(float) * (double)elements(m);
    BenchRow copy = copy_ceiling(o, "d2d_copy_add", traffic, size);
    Matrices d;
    alloc_device(&d, m);
    fill_inputs(o, &d, m);
    table_header("matrix add: GB/s counts 2 reads + 1 write per element; "
                 "ceiling = a copy moving as many bytes");
    double base_ms = 0.0;
    for (int v = 0; v < NADD; v++) {
        if (!kernel_selected(o, ADD_VERSIONS[v].name)) continue;
        d.add = ADD_VERSIONS[v].launch;
        float ms = time_median_ms(run_add, &d, 3, o->reps);
        if (v == 0) base_ms = ms;
        BenchRow r = {ADD_VERSIONS[v].name,
                      ADD_VERSIONS[v].role,
                      size,
                      ms,
                      gbs(traffic, ms),
                      "GB/s",
                      "d2d_copy",
                      copy.value};
        report_row(o->csv, info->name, CHAPTER, &r, base_ms);
    }
    report_row(o->csv, info->name, CHAPTER, &copy, 0.0);
    free_device(&d);
}

/* The transpose table: GB/s counts 1 read + 1 write of 4 bytes per element. */
static void bench_transpose(const Options *o, const DeviceInfo *info, MatrixSize m,
                            const char *size)
{
    double traffic = 2.0 * sizeof(float) * (double)elements(m);
    BenchRow copy = copy_ceiling(o, "d2d_copy_transpose", traffic, size);
    Matrices d;
    alloc_device(&d, m);
    fill_inputs(o, &d, m);
    table_header("transpose: GB/s counts 1 read + 1 write per element; "
                 "ceiling = a copy moving as many bytes");
    double base_ms = 0.0;
    for (int v = 0; v < NTRANSPOSE; v++) {
        if (!kernel_selected(o, TRANSPOSE_VERSIONS[v].name)) continue;
        d.transpose = TRANSPOSE_VERSIONS[v].launch;
        float ms = time_median_ms(run_transpose, &d, 3, o->reps);
        if (v == 0) base_ms = ms;
        BenchRow r = {TRANSPOSE_VERSIONS[v].name,
                      TRANSPOSE_VERSIONS[v].role,
                      size,
                      ms,
                      gbs(traffic, ms),
                      "GB/s",
                      "d2d_copy",
                      copy.value};
        report_row(o->csv, info->name, CHAPTER, &r, base_ms);
    }
    report_row(o->csv, info->name, CHAPTER, &copy, 0.0);
    free_device(&d);
}

static void bench_size(const Options *o, const DeviceInfo *info, MatrixSize m)
{
    char size[32];
    snprintf(size, sizeof size, "%dx%d", m.nx, m.ny);
    if (any_selected_add(o)) bench_add(o, info, m, size);
    if (any_selected_transpose(o)) bench_transpose(o, info, m, size);
}

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, ADD_VERSIONS, NADD);
    name_list_add(&KERNEL_NAMES, TRANSPOSE_VERSIONS, NTRANSPOSE);
    parse_args(argc, argv, &SPEC, &o);
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    int count = size_count(&o, (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]));
    size_t largest = elements(BENCH_SIZE);
    for (int s = 0; s < o.nsizes; s++) {
        size_t n = elements(to_matrix_size(&o.sizes[s]));
        largest = s == 0 || n > largest ? n : largest;
    }
    require_device_memory(&SPEC, &info, 3.0 * sizeof(float) * (double)largest,
                          "the three matrices");

    int failures = 0;
    if (o.check) {
        printf("\ncheck (seed %llu): max relative error against the CPU in double precision\n",
               o.seed);
        for (int s = 0; s < count; s++)
            failures += check_size(&o, o.nsizes ? to_matrix_size(&o.sizes[s]) : CHECK_SIZES[s]);
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        if (o.nsizes == 0) bench_size(&o, &info, BENCH_SIZE);
        for (int s = 0; s < o.nsizes; s++) bench_size(&o, &info, to_matrix_size(&o.sizes[s]));
    }
    return failures ? 1 : 0;
}
