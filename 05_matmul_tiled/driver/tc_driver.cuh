/* Chapter 05 driver, part two: the tensor-core ladder's tables, check and bench.
 *
 * Two tables, one per input type, each ending with its ceiling: cuBLAS (cublasGemmEx) with
 * the same inputs, the same layout (A and Bt, "TN") and fp32 accumulation. The check
 * rounds the random inputs to the kernel's type first (bf16, or TF32 for the fp32-storage
 * versions) and computes the double-precision references (check.cuh: the GPU's of every
 * element, the CPU's of all or some rows) from those rounded values, so it measures how
 * the kernel accumulates, not what rounding the inputs costs; that cost is reported once,
 * by tc_precision_report, against the fp32 product of the unrounded inputs.
 * The Hopper versions are skipped, with the reason, where they cannot run (another GPU, a
 * build without sm_90a, or K and pointers that TMA cannot describe). */
#ifndef CH05_DRIVER_TC_DRIVER_CUH
#define CH05_DRIVER_TC_DRIVER_CUH

#include <cublas_v2.h>

#include "05_matmul_tiled/driver/bench.cuh"
#include "05_matmul_tiled/driver/check.cuh"
/* sgemm_best: the fp32 product of the precision report */
#include "05_matmul_tiled/any_shape/best.cuh"
#include "05_matmul_tiled/tensor_cores/best.cuh"
#include "05_matmul_tiled/tensor_cores/round.h"
#include "05_matmul_tiled/tensor_cores/01_wmma.cuh"

/* A row of a tensor-core table (common/versions.h): the launcher of the tensor-core contract
 * (tensor_cores/common.cuh) for input type T, and whether the version is wgmma + TMA (sm_90a
 * only, and only where TMA can describe A and Bt). */
template <typename T> using TcLauncher = void (*)(int M, int N, int K, float alpha, const T *A,
                                                  const T *Bt, float beta, float *C);
typedef struct {
    bool hopper;
} TcNeeds;
template <typename T> using TcVersion = Version<TcLauncher<T>, TcNeeds>;

/* ------------------------------------------------------------------ the input types on the host */

/* An input type's name, its rounding from float and its exact value in double (to(), which
 * the GPU's fp64 reference calls too: host and device code). */
template <typename T> struct TcHost;
template <> struct TcHost<bf16> {
    static const char *name(void) { return "bf16"; }
    static bf16 from(float x) { return __float2bfloat16(x); }
    __host__ __device__ static double to(bf16 x) { return (double)__bfloat162float(x); }
};
template <> struct TcHost<float> {
    static const char *name(void) { return "tf32"; }
    static float from(float x) { return tc_round_tf32(x); } /* to nearest */
    __host__ __device__ static double to(float x) { return (double)x; }
};

/* n uniform [-1, 1) values rounded to T. */
template <typename T> static T *tc_random(size_t n, unsigned long long seed)
{
    float *f = (float *)xmalloc(n * sizeof(float));
    T *t = (T *)xmalloc(n * sizeof(T));
    fill_uniform(f, n, -1.0f, 1.0f, seed);
    for (size_t i = 0; i < n; i++) t[i] = TcHost<T>::from(f[i]);
    free(f);
    return t;
}

/* The ProductRow of the tensor-core versions: acc[n] = sum over k of A[row][k] Bt[n][k]. */
template <typename T>
static void tc_product_row(Shape s, const void *A_, const void *Bt_, int row, double *acc)
{
    const T *a = (const T *)A_ + (size_t)row * s.K, *Bt = (const T *)Bt_;
    double *ar = (double *)xmalloc(sizeof(double) * (size_t)s.K);
    for (int k = 0; k < s.K; k++) ar[k] = TcHost<T>::to(a[k]);
    for (int n = 0; n < s.N; n++) {
        const T *b = Bt + (size_t)n * s.K;
        double sum = 0.0;
        for (int k = 0; k < s.K; k++) sum += ar[k] * TcHost<T>::to(b[k]);
        acc[n] = sum;
    }
    free(ar);
}

/* NULL when version v can run on this shape and these pointers, else why not. */
template <typename T>
static const char *tc_version_refusal(const TcVersion<T> *v, int K, const T *A, const T *Bt)
{
    if (!v->extra.hopper) return NULL;
    const char *why = tc_wgmma_unavailable();
    return why ? why : tc_tma_refusal(K, sizeof(T), A, Bt);
}

/* ------------------------------------------------------------------ check */

template <typename T> struct TcRun {
    const TcVersion<T> *v;
    Shape s;
    const T *A, *Bt;
};

template <typename T> static void tc_run_into(void *ctx, float beta, float *C)
{
    TcRun<T> *r = (TcRun<T> *)ctx;
    r->v->launch(r->s.M, r->s.N, r->s.K, ALPHA, r->A, r->Bt, beta, C);
}

/* The accumulation error allowed: as for the fp32 ladder (products of bf16 or TF32 inputs
 * are exact in fp32, so only the additions round), with twice the room, because the tensor
 * cores may truncate their additions instead of rounding them. */
static double tc_tolerance(int K) { return 2.0 * sgemm_tolerance(K); }

template <typename T>
static int tc_check_shape(const Options *o, Shape s, const TcVersion<T> *versions, int count)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.N * s.K, c_n = (size_t)s.M * s.N;
    unsigned long long seed = o->seed + (unsigned long long)s.M * 1000003ULL + s.N * 1009ULL + s.K;
    T *A = tc_random<T>(a_n, seed), *Bt = tc_random<T>(b_n, seed + 1);
    float *C0 = (float *)xmalloc(c_n * sizeof(float)), *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(C0, c_n, -1.0f, 1.0f, seed + 2);
    Reference ref;
    build_reference(s, tc_product_row<T>, A, Bt, C0, ALPHA, BETA, &ref);
    T *dA, *dB;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, a_n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&dB, b_n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, A, a_n * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, Bt, b_n * sizeof(T), cudaMemcpyHostToDevice));
    FullReference full;
    char what[48];
    snprintf(what, sizeof what, "fp64 reference (GPU, %s)", TcHost<T>::name());
    int failures =
        !gpu_reference<T, TcHost<T>, true>(what, s, dA, dB, C0, ALPHA, BETA, &ref, &full);
    for (int v = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name)) continue;
        if (v == count - 1 && !check_ceiling_here(s)) continue;
        const char *why = tc_version_refusal(&versions[v], s.K, dA, dB);
        if (why) {
            printf("  skip %-28s %s\n", versions[v].name, why);
            continue;
        }
        TcRun<T> run = {&versions[v], s, dA, dB};
        failures += check_two_passes(versions[v].name, s, tc_run_into<T>, &run, dC, C0, C, &full,
                                     tc_tolerance(s.K));
    }
    print_reference_note(s, &ref);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free_full_reference(&full);
    free(A);
    free(Bt);
    free(C0);
    free(C);
    return failures;
}

/* ------------------------------------------------------------------ what each precision costs */

/* One product of unrounded uniform inputs in fp32 (sgemm_best), TF32 and bf16 (tc_best),
 * each against the double-precision product of the unrounded inputs: the error a reader
 * buys with each input type. (Bt for the tensor-core versions is B transposed.) */
static void tc_precision_report(unsigned long long seed)
{
    Shape s = {1024, 1024, 1024};
    size_t n = (size_t)s.M * s.K;
    float *A = (float *)xmalloc(n * sizeof(float)), *B = (float *)xmalloc(n * sizeof(float));
    float *Bt = (float *)xmalloc(n * sizeof(float)), *C0 = (float *)calloc(n, sizeof(float));
    float *C = (float *)xmalloc(n * sizeof(float)), *picked = (float *)xmalloc(n * sizeof(float));
    bf16 *A16 = (bf16 *)xmalloc(n * sizeof(bf16)), *Bt16 = (bf16 *)xmalloc(n * sizeof(bf16));
    fill_uniform(A, n, -1.0f, 1.0f, seed);
    fill_uniform(B, n, -1.0f, 1.0f, seed + 1);
    for (int k = 0; k < s.K; k++)
        for (int j = 0; j < s.N; j++) Bt[(size_t)j * s.K + k] = B[(size_t)k * s.N + j];
    for (size_t i = 0; i < n; i++)
        A16[i] = __float2bfloat16(A[i]), Bt16[i] = __float2bfloat16(Bt[i]);
    Reference ref;
    build_reference(s, cpu_product_row, A, B, C0, 1.0f, 0.0f, &ref);
    float *d[5];
    for (int i = 0; i < 5; i++) CUDA_CHECK(cudaMalloc(&d[i], n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d[0], A, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d[1], B, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d[2], Bt, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d[3], A16, n * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d[4], Bt16, n * sizeof(bf16), cudaMemcpyHostToDevice));
    float *dC;
    CUDA_CHECK(cudaMalloc(&dC, n * sizeof(float)));
    printf("\nwhat the input type costs (%dx%dx%d, uniform [-1, 1) inputs, normwise error "
           "against the\ndouble-precision product of the unrounded inputs):\n",
           s.M, s.N, s.K);
    for (int p = 0; p < 3; p++) {
        if (p == 0) sgemm_best(s.M, s.N, s.K, 1.0f, d[0], d[1], 0.0f, dC);
        if (p == 1) tc_best_tf32(s.M, s.N, s.K, 1.0f, d[0], d[2], 0.0f, dC);
        if (p == 2)
            tc_best_bf16(s.M, s.N, s.K, 1.0f, (const bf16 *)d[3], (const bf16 *)d[4], 0.0f, dC);
        CUDA_CHECK(cudaMemcpy(C, dC, n * sizeof(float), cudaMemcpyDeviceToHost));
        printf("  %-5s %.2e\n", p == 0 ? "fp32" : (p == 1 ? "tf32" : "bf16"),
               sampled_error(s, C, &ref, ref.ref_zero, picked));
    }
    for (int i = 0; i < 5; i++) CUDA_CHECK(cudaFree(d[i]));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free(A);
    free(B);
    free(Bt);
    free(C0);
    free(C);
    free(picked);
    free(A16);
    free(Bt16);
}

/* ------------------------------------------------------------------ bench */

template <typename T> struct TcBenchCtx {
    Shape s;
    OperandSets sets;
    const TcVersion<T> *v;
};

template <typename T> static void tc_run_timed(void *p)
{
    TcBenchCtx<T> *b = (TcBenchCtx<T> *)p;
    int i = operand_sets_next(&b->sets);
    b->v->launch(b->s.M, b->s.N, b->s.K, ALPHA, (const T *)b->sets.A[i], (const T *)b->sets.B[i],
                 BETA, (float *)b->sets.C[i]);
}

/* Times every selected version of one table on one shape against the table's ceiling. */
template <typename T> static void tc_bench_shape(const Options *o, const DeviceInfo *info, Shape s,
                                                 const TcVersion<T> *versions, int count)
{
    char size[48], title[200];
    shape_str(s, size, sizeof size);
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.N * s.K, c_n = (size_t)s.M * s.N;
    T *A = tc_random<T>(a_n, o->seed), *Bt = tc_random<T>(b_n, o->seed + 1);
    float *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(C, c_n, -1.0f, 1.0f, o->seed + 2);
    TcBenchCtx<T> b;
    b.s = s;
    operand_sets_alloc(&b.sets, info, A, a_n * sizeof(T), Bt, b_n * sizeof(T), C,
                       c_n * sizeof(float));
    free(A);
    free(Bt);
    free(C);
    const TcVersion<T> *ceiling = &versions[count - 1];
    b.v = ceiling;
    float ceiling_ms = time_within_budget(tc_run_timed<T>, &b, o->reps);
    snprintf(title, sizeof title,
             "%s GEMM %s (A and Bt, fp32 accumulation): TFLOP/s = 2MNK / time; "
             "ceiling = %s (%d buffer sets)",
             TcHost<T>::name(), size, ceiling->name, b.sets.nsets);
    table_header(title);
    double base_ms = 0.0;
    for (int v = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name) && v != count - 1) continue;
        const char *why =
            tc_version_refusal(&versions[v], s.K, (const T *)b.sets.A[0], (const T *)b.sets.B[0]);
        if (why) {
            printf("%-24s skipped: %s\n", versions[v].name, why);
            continue;
        }
        b.v = &versions[v];
        float ms = v == count - 1 ? ceiling_ms : time_within_budget(tc_run_timed<T>, &b, o->reps);
        if (base_ms == 0.0) base_ms = ms;
        BenchRow r = {versions[v].name, versions[v].role, size,          ms,
                      tflops(s, ms),    "TFLOP/s",        ceiling->name, tflops(s, ceiling_ms)};
        report_row(o->csv, info->name, CHAPTER, &r, base_ms);
    }
    operand_sets_free(&b.sets);
}

#endif
