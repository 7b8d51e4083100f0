/* Chapter 05 driver: fp32 SGEMM, C = alpha * A * B + beta * C, row-major.
 * --check validates every version against a double-precision CPU product (normwise
 * relative error) on awkward shapes; --bench times every version against cuBLAS SGEMM
 * (fp32 compute, no TF32) on the same shape in the same run. */
#include <cublas_v2.h>
#include <math.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "kernels.cuh"

#define CHAPTER "05_matmul_tiled"

typedef struct {
    const char *name;
    const char *role;
    SgemmLauncher launch;
    int smem_bytes; /* dynamic shared memory per block (0: the default 48 KB suffice) */
} Version;

static void sgemm_cublas(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C);

static const Version VERSIONS[] = {
    {"naive", "naive", sgemm_naive, 0},
    {"coalesced", "step", sgemm_coalesced, 0},
    {"smem", "step", sgemm_smem, 0},
    {"blocktile_1d", "step", sgemm_blocktile_1d, 0},
    {"blocktile_2d", "step", sgemm_blocktile_2d, 0},
    {"vectorized", "step", sgemm_vectorized, 0},
    {"padded", "step", sgemm_padded, 0},
    {"warptile", "step", sgemm_warptile, 0},
    {"double_buffer", "step", sgemm_double_buffer, SgemmWarptileCfg::SMEM_BYTES},
    {"hopper", "optimized", sgemm_hopper, SgemmHopperCfg::SMEM_BYTES},
    {"hopper_small", "step", sgemm_hopper_small, SgemmSmallCfg::SMEM_BYTES},
    {"splitk", "step", sgemm_splitk, SgemmSmallCfg::SMEM_BYTES},
    {"splitk_8x8", "step", sgemm_splitk_8x8, SgemmSplitWideCfg::SMEM_BYTES},
    {"best", "step", sgemm_best, 0},
    {"cublas", "ceiling", sgemm_cublas, 0},
};
#define NVERSIONS (int)(sizeof VERSIONS / sizeof VERSIONS[0])
#define CUBLAS_INDEX (NVERSIONS - 1)
static const char *const KERNEL_NAMES[] = {
    "naive", "coalesced", "smem", "blocktile_1d", "blocktile_2d", "vectorized", "padded",
    "warptile", "double_buffer", "hopper", "hopper_small", "splitk", "splitk_8x8",
    "best", "cublas", NULL};

/* The shapes that break lazy indexing, then chapter 07's MLP shapes (batch 256 and 32,
 * forward and the transposed-operand backward products, all as NN), then the bench size. */
static const int CHECK_SHAPES[][3] = {
    {1, 1, 1}, {7, 13, 5}, {127, 129, 131}, {1000, 1, 4097}, {513, 1000, 77},
    {256, 1024, 784}, {256, 10, 1024}, {784, 1024, 256}, {256, 1024, 10}, {1024, 10, 256},
    {32, 1024, 784}, {784, 1024, 32}, {32, 10, 1024}, {1024, 10, 32}, {32, 1024, 10},
    {4096, 4096, 4096}};
#define NCHECK (int)(sizeof CHECK_SHAPES / sizeof CHECK_SHAPES[0])
#define NMLP 10 /* CHECK_SHAPES[5 .. 14] */
static const int SWEEP_SIZES[] = {256, 512, 1024, 2048, 4096, 8192};
#define NSWEEP (int)(sizeof SWEEP_SIZES / sizeof SWEEP_SIZES[0])

static const float ALPHA = 0.75f, BETA = -0.5f;
/* Skip a version at a size when one run would take longer than this (predicted 8x its
 * time at half the size): the naive kernels at 8192 would otherwise dominate the run. */
static const double SKIP_RUN_MS = 1000.0;
/* Total timed budget per version and size: fewer repetitions for the slow versions. */
static const double BUDGET_MS = 1500.0;

static const ProgramSpec SPEC = {
    "matmul_tiled",
    "Chapter 05: fp32 SGEMM C = alpha*A*B + beta*C, ten kernels from naive to Hopper-tuned, "
    "against cuBLAS.",
    "shapes: N (square) or MxNxK (A is MxK, B KxN), each dimension up to 65536\n"
    "                   (check default: 1x1x1, 7x13x5, 127x129x131, 1000x1x4097, 513x1000x77,\n"
    "                   the chapter-07 MLP shapes, 4096; bench default: squares 256..8192 and\n"
    "                   the MLP shapes)",
    NULL, KERNEL_NAMES, 3, 65536LL, NULL, NULL};

static cublasHandle_t cublas_handle(void)
{
    static cublasHandle_t handle = NULL;
    if (handle == NULL) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cublasCreate failed\n");
            exit(1);
        }
        /* Default math: fp32 FMAs throughout, TF32 tensor cores off. */
        if (cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cublasSetMathMode failed\n");
            exit(1);
        }
    }
    return handle;
}

/* cuBLAS is column-major: a row-major M x N C is a column-major N x M C^T = B^T A^T, so
 * the row-major product is cublasSgemm with the operands swapped and no transposes. */
static void sgemm_cublas(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C)
{
    cublasStatus_t st = cublasSgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B,
                                    N, A, K, &beta, C, N);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasSgemm failed (status %d)\n", (int)st);
        exit(1);
    }
}

typedef struct { int M, N, K; } Shape;

static Shape shape_of(const ProblemSize *s)
{
    Shape sh;
    sh.M = (int)s->dim[0];
    sh.N = (int)(s->ndims == 3 ? s->dim[1] : s->dim[0]);
    sh.K = (int)(s->ndims == 3 ? s->dim[2] : s->dim[0]);
    return sh;
}

static const char *shape_str(Shape s, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d", s.M, s.N, s.K);
    return buf;
}

/* Every how many rows the CPU reference is computed: all rows while M*N*K <= 2^28
 * (a fraction of a second in double), else evenly spaced rows plus the last one. The
 * step is odd, so the sampled rows fall at every offset inside the kernels' row tiles. */
static int reference_row_step(Shape s)
{
    double work = (double)s.M * s.N * s.K, limit = 268435456.0;
    if (work <= limit) return 1;
    return (int)ceil(work / limit) | 1;
}

/* acc = (A B)[row] in double. */
static void cpu_product_row(Shape s, const float *A, const float *B, int row, double *acc)
{
    for (int n = 0; n < s.N; n++) acc[n] = 0.0;
    for (int k = 0; k < s.K; k++) {
        double a = A[(size_t)row * s.K + k];
        const float *b = B + (size_t)k * s.N;
        for (int n = 0; n < s.N; n++) acc[n] += a * b[n];
    }
}

typedef struct {
    int nrows, *rows;
    double *ref_beta, *ref_zero; /* nrows x N: with beta = BETA and with beta = 0 */
} Reference;

/* The reference of the sampled rows: alpha A B (for beta = 0) and alpha A B + beta C0. */
static void build_reference(Shape s, const float *A, const float *B, const float *C0,
                            Reference *r)
{
    int step = reference_row_step(s);
    r->nrows = 0;
    r->rows = (int *)xmalloc(sizeof(int) * (size_t)(s.M / step + 2));
    for (int m = 0; m < s.M; m += step) r->rows[r->nrows++] = m;
    if (r->rows[r->nrows - 1] != s.M - 1) r->rows[r->nrows++] = s.M - 1;
    r->ref_beta = (double *)xmalloc(sizeof(double) * (size_t)r->nrows * s.N);
    r->ref_zero = (double *)xmalloc(sizeof(double) * (size_t)r->nrows * s.N);
    double *acc = (double *)xmalloc(sizeof(double) * (size_t)s.N);
    for (int i = 0; i < r->nrows; i++) {
        cpu_product_row(s, A, B, r->rows[i], acc);
        const float *c0 = C0 + (size_t)r->rows[i] * s.N;
        double *ref_beta = r->ref_beta + (size_t)i * s.N, *ref_zero = r->ref_zero + (size_t)i * s.N;
        for (int n = 0; n < s.N; n++) {
            ref_zero[n] = (double)ALPHA * acc[n];
            ref_beta[n] = ref_zero[n] + (double)BETA * c0[n];
        }
    }
    free(acc);
}

static void free_reference(Reference *r)
{
    free(r->rows);
    free(r->ref_beta);
    free(r->ref_zero);
}

/* Normwise relative error of the sampled rows of the GPU result. */
static double sampled_error(Shape s, const float *gpu, const Reference *r, const double *ref,
                            float *picked)
{
    for (int i = 0; i < r->nrows; i++)
        memcpy(picked + (size_t)i * s.N, gpu + (size_t)r->rows[i] * s.N, sizeof(float) * s.N);
    return norm_rel_error(picked, ref, (size_t)r->nrows * s.N);
}

/* Tolerance: a K-term float dot product with random signs has a relative error of about
 * sqrt(K) units of 2^-24 (the rounding errors of the partial sums add up like a random
 * walk); 16 sqrt(K + 2) units leaves room for the alpha/beta epilogue and the blocked
 * summation orders, yet is ~10x below what rounding the inputs to TF32 (2^-11) gives. */
static double sgemm_tolerance(int K) { return 16.0 * sqrt((double)K + 2.0) * 0x1p-24; }

/* Whether this GPU can give a block the version's shared memory (the Hopper-tuned tiles
 * need 149 KB, more than most GeForce cards allow); if not, says so. */
static int version_fits(const Version *v)
{
    if (v->smem_bytes <= sgemm_smem_limit()) return 1;
    printf("  skip %-24s needs %d KB of shared memory per block; this GPU allows %d KB\n", v->name,
           v->smem_bytes / 1024, sgemm_smem_limit() / 1024);
    return 0;
}

/* Runs every selected version twice on one shape: on a poisoned C with beta = 0 (every
 * element must be written, C must not be read) and on C0 with beta = BETA. */
static int check_shape(const Options *o, Shape s)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    unsigned long long seed = o->seed + (unsigned long long)s.M * 1000003ULL + s.N * 1009ULL + s.K;
    float *A = (float *)xmalloc(a_n * sizeof(float)), *B = (float *)xmalloc(b_n * sizeof(float));
    float *C0 = (float *)xmalloc(c_n * sizeof(float)), *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(A, a_n, -1.0f, 1.0f, seed);
    fill_uniform(B, b_n, -1.0f, 1.0f, seed + 1);
    fill_uniform(C0, c_n, -1.0f, 1.0f, seed + 2);
    Reference ref;
    build_reference(s, A, B, C0, &ref);
    float *picked = (float *)xmalloc(sizeof(float) * (size_t)ref.nrows * s.N);

    float *dA, *dB, *dC;
    CUDA_CHECK(cudaMalloc(&dA, a_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, b_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, A, a_n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, B, b_n * sizeof(float), cudaMemcpyHostToDevice));

    char size[48], what[64];
    shape_str(s, size, sizeof size);
    double tol = sgemm_tolerance(s.K);
    int failures = 0;
    /* cuBLAS is the yardstick, not a lesson: checked on the large shapes only (it also
     * keeps the library out of the compute-sanitizer runs, which use small shapes). */
    int check_cublas = (double)s.M * s.N * s.K >= 1e8;
    for (int v = 0; v < NVERSIONS; v++) {
        if (!kernel_selected(o, VERSIONS[v].name) || !version_fits(&VERSIONS[v])) continue;
        if (v == CUBLAS_INDEX && !check_cublas) continue;
        poison_device(dC, c_n * sizeof(float));
        VERSIONS[v].launch(s.M, s.N, s.K, ALPHA, dA, dB, 0.0f, dC);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(C, dC, c_n * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s beta=0", VERSIONS[v].name);
        failures += !report_check(what, size, sampled_error(s, C, &ref, ref.ref_zero, picked), tol);

        CUDA_CHECK(cudaMemcpy(dC, C0, c_n * sizeof(float), cudaMemcpyHostToDevice));
        VERSIONS[v].launch(s.M, s.N, s.K, ALPHA, dA, dB, BETA, dC);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(C, dC, c_n * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s beta=%g", VERSIONS[v].name, BETA);
        failures += !report_check(what, size, sampled_error(s, C, &ref, ref.ref_beta, picked), tol);
    }
    if (ref.nrows < s.M) printf("       (%s: %d of %d rows compared)\n", size, ref.nrows, s.M);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free(picked); free(A); free(B); free(C0); free(C);
    return failures;
}

/* Several copies of A, B, C used in turn, so that together they exceed the L2 and each
 * run starts with its operands in DRAM, as in a real program's stream of GEMMs. */
#define MAX_SETS 64
typedef struct {
    Shape s;
    int nsets, next;
    float *A[MAX_SETS], *B[MAX_SETS], *C[MAX_SETS];
    SgemmLauncher launch;
} BenchCtx;

static void bench_alloc(BenchCtx *b, Shape s, const DeviceInfo *info, unsigned long long seed)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    double set_bytes = 4.0 * (double)(a_n + b_n + c_n);
    int want = (int)ceil(3.0 * info->l2_bytes / set_bytes);
    b->s = s;
    b->nsets = want < 1 ? 1 : (want > MAX_SETS ? MAX_SETS : want);
    b->next = 0;
    size_t biggest = a_n > b_n ? a_n : b_n;
    biggest = biggest > c_n ? biggest : c_n;
    float *host = (float *)xmalloc(biggest * sizeof(float));
    fill_uniform(host, biggest, -1.0f, 1.0f, seed);
    for (int i = 0; i < b->nsets; i++) {
        CUDA_CHECK(cudaMalloc(&b->A[i], a_n * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&b->B[i], b_n * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&b->C[i], c_n * sizeof(float)));
        CUDA_CHECK(cudaMemcpy(b->A[i], host, a_n * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b->B[i], host, b_n * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b->C[i], host, c_n * sizeof(float), cudaMemcpyHostToDevice));
    }
    free(host);
}

static void bench_free(BenchCtx *b)
{
    for (int i = 0; i < b->nsets; i++) {
        CUDA_CHECK(cudaFree(b->A[i]));
        CUDA_CHECK(cudaFree(b->B[i]));
        CUDA_CHECK(cudaFree(b->C[i]));
    }
}

static void run_version(void *p)
{
    BenchCtx *b = (BenchCtx *)p;
    int i = b->next;
    b->next = (i + 1) % b->nsets;
    b->launch(b->s.M, b->s.N, b->s.K, ALPHA, b->A[i], b->B[i], BETA, b->C[i]);
}

static double tflops(Shape s, double ms) { return 2.0 * s.M * s.N * (double)s.K / (ms * 1e-3) / 1e12; }

/* Median time of one version: one untimed run tells how many repetitions fit the budget. */
static float time_version(BenchCtx *b, SgemmLauncher launch, int max_reps)
{
    b->launch = launch;
    float once = time_median_ms(run_version, b, 1, 1);
    int reps = (int)(BUDGET_MS / (once > 1e-3f ? once : 1e-3f));
    reps = reps < 3 ? 3 : (reps > max_reps ? max_reps : reps);
    return time_median_ms(run_version, b, 2, reps);
}

static void emit(const Options *o, const DeviceInfo *info, const BenchRow *r, double base_ms)
{
    table_row(r, base_ms);
    if (o->csv && csv_append(o->csv, info->name, CHAPTER, r) != 0) exit(1);
}

/* Times every selected version on one shape against cuBLAS timed in the same run.
 * last_ms[v] carries each version's time from the previous (half-size) square, or 0. */
static void bench_shape(const Options *o, const DeviceInfo *info, Shape s, double *last_ms)
{
    char size[48];
    shape_str(s, size, sizeof size);
    BenchCtx b;
    bench_alloc(&b, s, info, o->seed);
    float cublas_ms = time_version(&b, sgemm_cublas, o->reps);
    double ceiling = tflops(s, cublas_ms);
    char title[160];
    snprintf(title, sizeof title, "sgemm %s: TFLOP/s = 2MNK / time; ceiling = cuBLAS SGEMM fp32 "
             "(%d buffer sets)", size, b.nsets);
    table_header(title);
    double base_ms = 0.0;
    for (int v = 0; v < CUBLAS_INDEX; v++) {
        if (!kernel_selected(o, VERSIONS[v].name) || !version_fits(&VERSIONS[v])) continue;
        if (last_ms && last_ms[v] * 8.0 > SKIP_RUN_MS) {
            printf("%-24s skipped: about %.0f ms a run predicted from the half size\n",
                   VERSIONS[v].name, last_ms[v] * 8.0);
            last_ms[v] = 1e30;
            continue;
        }
        float ms = time_version(&b, VERSIONS[v].launch, o->reps);
        if (last_ms) last_ms[v] = ms;
        if (v == 0) base_ms = ms;
        BenchRow r = {VERSIONS[v].name, VERSIONS[v].role, size, ms, tflops(s, ms), "TFLOP/s",
                      "cublas", ceiling};
        emit(o, info, &r, base_ms);
    }
    BenchRow c = {"cublas", "ceiling", size, cublas_ms, ceiling, "TFLOP/s", "cublas", ceiling};
    emit(o, info, &c, base_ms);
    bench_free(&b);
}

static double shape_bytes(Shape s)
{
    return 4.0 * ((double)s.M * s.K + (double)s.K * s.N + (double)s.M * s.N);
}

int main(int argc, char **argv)
{
    Options o;
    parse_args(argc, argv, &SPEC, &o);
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i].ndims == 2) cli_fail(&SPEC, "size '%lldx%lld': give N or MxNxK",
                                            o.sizes[i].dim[0], o.sizes[i].dim[1]);
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    double largest = shape_bytes(o.bench ? (Shape){8192, 8192, 8192} : (Shape){4096, 4096, 4096});
    if (o.nsizes) largest = 0.0;
    for (int i = 0; i < o.nsizes; i++) {
        double b = shape_bytes(shape_of(&o.sizes[i]));
        largest = b > largest ? b : largest;
    }
    require_device_memory(&SPEC, &info, largest, "A, B and C");

    int failures = 0;
    if (o.check) {
        printf("\ncheck (seed %llu, alpha %g, beta 0 on a poisoned C and beta %g): normwise "
               "relative error against a double-precision CPU product\n", o.seed, ALPHA, BETA);
        int count = o.nsizes ? o.nsizes : NCHECK;
        for (int i = 0; i < count; i++) {
            Shape s = o.nsizes ? shape_of(&o.sizes[i])
                               : (Shape){CHECK_SHAPES[i][0], CHECK_SHAPES[i][1], CHECK_SHAPES[i][2]};
            failures += check_shape(&o, s);
        }
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        double last_ms[NVERSIONS] = {0.0};
        if (o.nsizes) {
            for (int i = 0; i < o.nsizes; i++) bench_shape(&o, &info, shape_of(&o.sizes[i]), NULL);
        } else {
            for (int i = 0; i < NSWEEP; i++)
                bench_shape(&o, &info, (Shape){SWEEP_SIZES[i], SWEEP_SIZES[i], SWEEP_SIZES[i]}, last_ms);
            for (int i = 5; i < 5 + NMLP; i++)
                bench_shape(&o, &info, (Shape){CHECK_SHAPES[i][0], CHECK_SHAPES[i][1], CHECK_SHAPES[i][2]},
                            NULL);
        }
    }
    return failures ? 1 : 0;
}
