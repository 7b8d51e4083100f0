/* Chapter 05 driver, part two: the tensor-core ladder's tables, check and bench.
 *
 * Three tables, one per input type, each ending with its ceiling: cuBLAS (cublasGemmEx for
 * bf16 and TF32, cublasLtMatmul for e4m3) with the same inputs, the same layout (A and Bt,
 * "TN") and fp32 accumulation. The check rounds the random inputs to the kernel's type first
 * (bf16, TF32 for the fp32-storage versions, e4m3 with a per-tensor scale) and computes the
 * double-precision references (check.cuh: the GPU's of every element, the CPU's of all or
 * some rows) from those rounded values, so it measures how the kernel accumulates, not what
 * rounding the inputs costs; that cost is reported once, by tc_precision_report, against the
 * fp32 product of the unrounded inputs.
 * The Hopper versions are skipped, with the reason, where they cannot run (another GPU, a
 * build without sm_90a, or K and pointers that TMA cannot describe), and so is a ceiling
 * that cannot (cuBLASLt's FP8 GEMM before compute capability 8.9, or K % 16 != 0). */
#ifndef CH05_DRIVER_TC_DRIVER_CUH
#define CH05_DRIVER_TC_DRIVER_CUH

#include <cublas_v2.h>

#include "05_matmul_tiled/driver/bench.cuh"
#include "05_matmul_tiled/driver/ceilings.cuh" /* cublaslt_fp8_refusal */
#include "05_matmul_tiled/driver/check.cuh"
/* sgemm_best: the fp32 product of the precision report */
#include "05_matmul_tiled/any_shape/best.cuh"
#include "05_matmul_tiled/tensor_cores/best.cuh"
#include "05_matmul_tiled/tensor_cores/round.h"
#include "05_matmul_tiled/tensor_cores/01_wmma.cuh"
#include "05_matmul_tiled/tensor_cores/14_wgmma_fp8.cuh"
#include "05_matmul_tiled/tensor_cores/16_wgmma_wide.cuh"
#include "05_matmul_tiled/tensor_cores/18_wgmma_cload.cuh"
#include "05_matmul_tiled/tensor_cores/17_wgmma_streamk.cuh"

/* A row of a tensor-core table (common/versions.h): the launcher of the tensor-core contract
 * (tensor_cores/common.cuh) for input type T, and what the version needs: nothing (false),
 * wgmma + TMA on the operands as they are (true: sm_90a only, and only where TMA can describe
 * A and Bt), or wgmma at any K (TC_HOPPER_ANY_K: sm_90a only; it copies what TMA refuses). */
template <typename T> using TcLauncher = void (*)(int M, int N, int K, float alpha, const T *A,
                                                  const T *Bt, float beta, float *C);
enum { TC_HOPPER_ANY_K = 2 };
typedef struct {
    int hopper;
} TcNeeds;
template <typename T> using TcVersion = Version<TcLauncher<T>, TcNeeds>;

/* The accumulation error allowed: as for the fp32 ladder (products of bf16 or TF32 inputs
 * are exact in fp32, so only the additions round), with twice the room, because the tensor
 * cores may truncate their additions instead of rounding them. */
static double tc_tolerance(int K) { return 2.0 * sgemm_tolerance(K); }

/* The same for e4m3 inputs. A product of two e4m3 values has at most 8 significant bits (4
 * and 4), so the products are exact, and only the additions round, but inside the tensor
 * cores with about 14 significant bits, not fp32's 24 (tensor_cores/14_wgmma_fp8.cuh gives
 * the source): each of the ceil(K / 32) wgmma k-steps adds its 32 products into the running
 * sum and keeps about 13 bits after the leading one. How the adder drops the rest is not
 * documented; two models of it, played on the check's inputs at K = 32 .. 8192:
 *   - the step's exact sum cut to 14 bits, toward zero: each step loses up to 2^-13 of the
 *     running sum, always toward zero, and the running sum keeps its sign for long stretches
 *     of the K loop, so the losses add up linearly: normwise about ceil(K / 32) * 2^-15;
 *   - every addend shifted to the largest one's exponent and cut toward minus infinity before
 *     the sum (two's complement): all 33 cuts of a step push the same way whatever the signs:
 *     about ceil(K / 32) * 2^-12.
 * The H100 follows the first (the check measures 1.2e-3 at K = 4096 for wgmma_fp8 and for
 * cuBLASLt's FP8 GEMM, under that model's 3.2e-3), so the allowance is twice the first model,
 * ceil(K / 32) * 2^-14, plus tc_tolerance for the fp32 epilogue: 0.8% at K = 4096, where a
 * lost k-slice (1 of 32) shows as some 18% and a wrong swizzle or descriptor as 100% or more.
 * (The second model, four times that, is what an adder that aligns and cuts every addend
 * would give; a GPU that did would fail here, and its tolerance would be ceil(K / 32) * 2^-11.) */
static double tc_fp8_tolerance(int K)
{
    return tc_tolerance(K) + (double)((K + 31) / 32) * 0x1p-14;
}

/* ------------------------------------------------------------------ the input types on the host */

/* How the check and the bench make a type's inputs (from: uniform [-1, 1) floats to T), read
 * them back for the reference (to: T to the value it stands for, exact in double; host and
 * device code, the GPU's fp64 reference calls it too), which alpha they pass (the contract's
 * alpha times alpha_scale: per-tensor scales), the tolerance of the check, and why the
 * table's ceiling cannot run a shape (NULL: it can). */
template <typename T> struct TcHost;
template <> struct TcHost<bf16> {
    static const char *name(void) { return "bf16"; }
    static bf16 from(float x) { return __float2bfloat16(x); }
    __host__ __device__ static double to(bf16 x) { return (double)__bfloat162float(x); }
    static float alpha_scale(void) { return 1.0f; }
    static double tolerance(int K) { return tc_tolerance(K); }
    static const char *ceiling_refusal(Shape) { return NULL; }
};
template <> struct TcHost<float> {
    static const char *name(void) { return "tf32"; }
    static float from(float x) { return tc_round_tf32(x); } /* to nearest */
    __host__ __device__ static double to(float x) { return (double)x; }
    static float alpha_scale(void) { return 1.0f; }
    static double tolerance(int K) { return tc_tolerance(K); }
    static const char *ceiling_refusal(Shape) { return NULL; }
};
/* e4m3 with a per-tensor scale of 1/256 for A and for Bt: a uniform [-1, 1) value x is
 * stored as e4m3(256 x) (up to 256 of e4m3's 448, so none saturates and few are subnormal),
 * which stands for e4m3(256 x) / 256; the product of the stored values is scaled by
 * alpha * 2^-16 (exact: powers of two). __nv_fp8_e4m3 converts on the host too (round to
 * nearest even, saturating). */
#define TC_FP8_SCALE 256.0f
template <> struct TcHost<e4m3> {
    static const char *name(void) { return "e4m3"; }
    static e4m3 from(float x) { return e4m3(x * TC_FP8_SCALE); }
    __host__ __device__ static double to(e4m3 x) { return (double)(float)x / TC_FP8_SCALE; }
    static float alpha_scale(void) { return 1.0f / (TC_FP8_SCALE * TC_FP8_SCALE); }
    static double tolerance(int K) { return tc_fp8_tolerance(K); }
    static const char *ceiling_refusal(Shape s) { return cublaslt_fp8_refusal(s.M, s.N, s.K); }
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
static const char *tc_version_refusal(const TcVersion<T> *v, Shape s, const T *A, const T *Bt)
{
    if (!strcmp(v->role, "ceiling")) return TcHost<T>::ceiling_refusal(s);
    if (!v->extra.hopper) return NULL;
    const char *why = tc_wgmma_unavailable();
    if (why || v->extra.hopper == TC_HOPPER_ANY_K) return why;
    return tc_tma_refusal(s.K, sizeof(T), A, Bt);
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
    r->v->launch(r->s.M, r->s.N, r->s.K, ALPHA * TcHost<T>::alpha_scale(), r->A, r->Bt, beta, C);
}

/* Every selected version of one table on one shape; A starts a_shift elements and Bt
 * b_shift elements past the start of their allocations (1: an address TMA refuses). */
template <typename T> static int tc_check_shape_at(const Options *o, Shape s,
                                                   const TcVersion<T> *versions, int count,
                                                   int a_shift, int b_shift)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.N * s.K, c_n = (size_t)s.M * s.N;
    unsigned long long seed = o->seed + (unsigned long long)s.M * 1000003ULL + s.N * 1009ULL + s.K;
    T *A = tc_random<T>(a_n, seed), *Bt = tc_random<T>(b_n, seed + 1);
    float *C0 = (float *)xmalloc(c_n * sizeof(float)), *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(C0, c_n, -1.0f, 1.0f, seed + 2);
    Reference ref;
    build_reference(s, tc_product_row<T>, A, Bt, C0, ALPHA, BETA, &ref);
    T *a_alloc, *b_alloc;
    float *dC;
    CUDA_CHECK(cudaMalloc(&a_alloc, (a_n + a_shift) * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&b_alloc, (b_n + b_shift) * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    T *dA = a_alloc + a_shift, *dB = b_alloc + b_shift;
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
        const char *why = tc_version_refusal(&versions[v], s, dA, dB);
        if (why) {
            printf("  skip %-28s %s\n", versions[v].name, why);
            continue;
        }
        TcRun<T> run = {&versions[v], s, dA, dB};
        failures += check_two_passes(versions[v].name, s, tc_run_into<T>, &run, dC, C0, C, &full,
                                     TcHost<T>::tolerance(s.K));
    }
    print_reference_note(s, &ref);
    CUDA_CHECK(cudaFree(a_alloc));
    CUDA_CHECK(cudaFree(b_alloc));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free_full_reference(&full);
    free(A);
    free(Bt);
    free(C0);
    free(C);
    return failures;
}

template <typename T>
static int tc_check_shape(const Options *o, Shape s, const TcVersion<T> *versions, int count)
{
    return tc_check_shape_at(o, s, versions, count, 0, 0);
}

/* ------------------------------------------------------------------ what each precision costs */

/* One product of unrounded uniform inputs in fp32 (sgemm_best), TF32 and bf16 (tc_best),
 * and e4m3 (tc_wgmma_fp8, on Hopper), each against the double-precision product of the
 * unrounded inputs: the error a reader buys with each input type. (Bt for the tensor-core
 * versions is B transposed.) */
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
    /* e4m3, each input scaled by 256 before rounding (TcHost<e4m3>), on the persistent kernel */
    const char *no_fp8 = tc_wgmma_unavailable();
    if (no_fp8) {
        printf("  e4m3  skipped: %s\n", no_fp8);
    } else {
        e4m3 *A8 = (e4m3 *)xmalloc(n * sizeof(e4m3)), *Bt8 = (e4m3 *)xmalloc(n * sizeof(e4m3));
        for (size_t i = 0; i < n; i++)
            A8[i] = TcHost<e4m3>::from(A[i]), Bt8[i] = TcHost<e4m3>::from(Bt[i]);
        e4m3 *dA8, *dB8;
        CUDA_CHECK(cudaMalloc(&dA8, n * sizeof(e4m3)));
        CUDA_CHECK(cudaMalloc(&dB8, n * sizeof(e4m3)));
        CUDA_CHECK(cudaMemcpy(dA8, A8, n * sizeof(e4m3), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dB8, Bt8, n * sizeof(e4m3), cudaMemcpyHostToDevice));
        tc_wgmma_fp8(s.M, s.N, s.K, TcHost<e4m3>::alpha_scale(), dA8, dB8, 0.0f, dC);
        CUDA_CHECK(cudaMemcpy(C, dC, n * sizeof(float), cudaMemcpyDeviceToHost));
        printf("  %-5s %.2e (inputs scaled by 256 into e4m3's range)\n", "e4m3",
               sampled_error(s, C, &ref, ref.ref_zero, picked));
        CUDA_CHECK(cudaFree(dA8));
        CUDA_CHECK(cudaFree(dB8));
        free(A8);
        free(Bt8);
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
    const TcVersion<T> **timed; /* the versions time_in_rounds chooses from */
};

/* A timing context for shape s: random inputs of type T and C, copied into as many operand
 * sets as keep the working set past the L2 (operand_sets_alloc). */
template <typename T>
static void tc_bench_ctx_init(TcBenchCtx<T> *b, const Options *o, const DeviceInfo *info, Shape s)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.N * s.K, c_n = (size_t)s.M * s.N;
    T *A = tc_random<T>(a_n, o->seed), *Bt = tc_random<T>(b_n, o->seed + 1);
    float *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(C, c_n, -1.0f, 1.0f, o->seed + 2);
    b->s = s;
    operand_sets_alloc(&b->sets, info, A, a_n * sizeof(T), Bt, b_n * sizeof(T), C,
                       c_n * sizeof(float));
    free(A);
    free(Bt);
    free(C);
}

template <typename T> static void tc_run_timed(void *p)
{
    TcBenchCtx<T> *b = (TcBenchCtx<T> *)p;
    int i = operand_sets_next(&b->sets);
    b->v->launch(b->s.M, b->s.N, b->s.K, ALPHA * TcHost<T>::alpha_scale(), (const T *)b->sets.A[i],
                 (const T *)b->sets.B[i], BETA, (float *)b->sets.C[i]);
}

template <typename T> static void tc_select_timed(void *p, int which)
{
    TcBenchCtx<T> *b = (TcBenchCtx<T> *)p;
    b->v = b->timed[which];
}

/* Fills b->timed (allocated here, the caller frees it) with the versions of table[0..count-1)
 * that --kernel selects and that can run on s, in table order, then the ceiling,
 * table[count - 1]: what time_in_rounds times. Returns how many. */
template <typename T> static int tc_timed_versions(const Options *o, TcBenchCtx<T> *b, Shape s,
                                                   const TcVersion<T> *table, int count)
{
    const T *A0 = (const T *)b->sets.A[0], *B0 = (const T *)b->sets.B[0];
    b->timed = (const TcVersion<T> **)xmalloc(sizeof(*b->timed) * (size_t)count);
    int n = 0;
    for (int v = 0; v < count - 1; v++)
        if (kernel_selected(o, table[v].name) && !tc_version_refusal(&table[v], s, A0, B0))
            b->timed[n++] = &table[v];
    b->timed[n++] = &table[count - 1];
    return n;
}

/* Times every selected version of one table on one shape against the table's ceiling (its
 * last version), all in the same rounds (time_in_rounds). */
template <typename T> static void tc_bench_shape(const Options *o, const DeviceInfo *info, Shape s,
                                                 const TcVersion<T> *versions, int count)
{
    char size[48], title[200];
    shape_str(s, size, sizeof size);
    TcBenchCtx<T> b;
    tc_bench_ctx_init(&b, o, info, s);
    const TcVersion<T> *ceiling = &versions[count - 1];
    const T *A0 = (const T *)b.sets.A[0], *B0 = (const T *)b.sets.B[0];
    const char *no_ceiling = tc_version_refusal(ceiling, s, A0, B0);
    if (no_ceiling) {
        printf("\n%s GEMM %s skipped: the ceiling %s cannot run: %s\n", TcHost<T>::name(), size,
               ceiling->name, no_ceiling);
        operand_sets_free(&b.sets);
        return;
    }
    float *ms = (float *)xmalloc(sizeof(float) * (size_t)count);
    int n = tc_timed_versions(o, &b, s, versions, count);
    time_in_rounds(tc_run_timed<T>, tc_select_timed<T>, &b, n, o->reps, BUDGET_MS, WARM_MS,
                   BENCH_SETTLE_MS, ms);
    float ceiling_ms = ms[n - 1];
    snprintf(title, sizeof title,
             "%s GEMM %s (A and Bt, fp32 accumulation): TFLOP/s = 2MNK / time; "
             "ceiling = %s (%d buffer sets)",
             TcHost<T>::name(), size, ceiling->name, b.sets.nsets);
    table_header(title);
    double base_ms = 0.0;
    for (int v = 0, t = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name) && v != count - 1) continue;
        if (t < n && b.timed[t] != &versions[v]) {
            printf("%-24s skipped: %s\n", versions[v].name,
                   tc_version_refusal(&versions[v], s, A0, B0));
            continue;
        }
        float v_ms = ms[t++];
        bench_log_add(s, versions[v].name, v_ms); /* for the tensor-core sweep's summary */
        if (base_ms == 0.0) base_ms = v_ms;
        BenchRow r = {versions[v].name, versions[v].role, size,          v_ms,
                      tflops(s, v_ms),  "TFLOP/s",        ceiling->name, tflops(s, ceiling_ms)};
        report_row(o->csv, info->name, CHAPTER, &r, base_ms);
    }
    free(ms);
    free(b.timed);
    operand_sets_free(&b.sets);
}

#endif
