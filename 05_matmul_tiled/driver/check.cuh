/* Chapter 05 driver, the check: a CPU reference in double on sampled rows of C, the
 * normwise error of those rows, the tolerance, and check_shape, which runs a table of
 * versions on one shape. The row sampling, build_reference and sampled_error see the
 * operands only through a ProductRow function, so versions with other input types or
 * layouts (B given transposed, say) can use them with a ProductRow of their own. */
#ifndef CH05_DRIVER_CHECK_CUH
#define CH05_DRIVER_CHECK_CUH

#include <math.h>
#include <string.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/validate.h"
#include "05_matmul_tiled/driver/driver.cuh"

/* Every how many rows the CPU reference is computed: all rows while M*N*K <= 2^28
 * (a fraction of a second in double), else evenly spaced rows plus the last one. The
 * step is odd, so the sampled rows fall at every offset inside the kernels' row tiles. */
static int reference_row_step(Shape s)
{
    double work = (double)s.M * s.N * s.K, limit = 268435456.0;
    if (work <= limit) return 1;
    return (int)ceil(work / limit) | 1;
}

/* acc = (A B)[row] in double, for A and B as the versions take them. */
typedef void (*ProductRow)(Shape s, const void *A, const void *B, int row, double *acc);

/* The ProductRow of this chapter's fp32 versions: A (M x K) and B (K x N) row-major. */
static void cpu_product_row(Shape s, const void *A_, const void *B_, int row, double *acc)
{
    const float *A = (const float *)A_, *B = (const float *)B_;
    for (int n = 0; n < s.N; n++) acc[n] = 0.0;
    for (int k = 0; k < s.K; k++) {
        double a = A[(size_t)row * s.K + k];
        const float *b = B + (size_t)k * s.N;
        for (int n = 0; n < s.N; n++) acc[n] += a * b[n];
    }
}

typedef struct {
    int nrows, *rows;
    double *ref_beta, *ref_zero; /* nrows x N: with build_reference's beta and with beta = 0 */
} Reference;

/* The rows the reference covers: every reference_row_step-th from 0, and the last. */
static void reference_rows(Shape s, Reference *r)
{
    int step = reference_row_step(s);
    r->nrows = 0;
    r->rows = (int *)xmalloc(sizeof(int) * (size_t)(s.M / step + 2));
    for (int m = 0; m < s.M; m += step) r->rows[r->nrows++] = m;
    if (r->rows[r->nrows - 1] != s.M - 1) r->rows[r->nrows++] = s.M - 1;
}

/* The reference of the sampled rows: alpha A B (for beta = 0) and alpha A B + beta C0. */
static void build_reference(Shape s, ProductRow product_row, const void *A, const void *B,
                            const float *C0, float alpha, float beta, Reference *r)
{
    reference_rows(s, r);
    r->ref_beta = (double *)xmalloc(sizeof(double) * (size_t)r->nrows * s.N);
    r->ref_zero = (double *)xmalloc(sizeof(double) * (size_t)r->nrows * s.N);
    double *acc = (double *)xmalloc(sizeof(double) * (size_t)s.N);
    for (int i = 0; i < r->nrows; i++) {
        product_row(s, A, B, r->rows[i], acc);
        const float *c0 = C0 + (size_t)r->rows[i] * s.N;
        double *ref_beta = r->ref_beta + (size_t)i * s.N, *ref_zero = r->ref_zero + (size_t)i * s.N;
        for (int n = 0; n < s.N; n++) {
            ref_zero[n] = (double)alpha * acc[n];
            ref_beta[n] = ref_zero[n] + (double)beta * c0[n];
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

/* Launches one version with ALPHA and the given beta into the device buffer C. */
typedef void (*RunInto)(void *ctx, float beta, float *C);

/* One version on one shape, twice: on a poisoned C with beta = 0 (every element must be
 * written, C must not be read) and on C0 with beta = BETA. dC is the device C, C a host
 * buffer of M x N; returns the number of failed comparisons. */
static int check_two_passes(const char *name, Shape s, RunInto run, void *ctx, float *dC,
                            const float *C0, float *C, const Reference *ref, float *picked,
                            double tol)
{
    size_t c_bytes = (size_t)s.M * s.N * sizeof(float);
    char size[48], what[64];
    shape_str(s, size, sizeof size);
    int failures = 0;
    for (int pass = 0; pass < 2; pass++) {
        float beta = pass ? BETA : 0.0f;
        if (pass)
            CUDA_CHECK(cudaMemcpy(dC, C0, c_bytes, cudaMemcpyHostToDevice));
        else
            poison_device(dC, c_bytes);
        run(ctx, beta, dC);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(C, dC, c_bytes, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s beta=%g", name, beta);
        double err = sampled_error(s, C, ref, pass ? ref->ref_beta : ref->ref_zero, picked);
        failures += !report_check(what, size, err, tol);
    }
    return failures;
}

/* cuBLAS is the yardstick, not a lesson: checked on the large shapes only (it also keeps
 * the library out of the compute-sanitizer runs, which use small shapes). */
static int check_ceiling_here(Shape s) { return (double)s.M * s.N * s.K >= 1e8; }

typedef struct {
    SgemmLauncher launch;
    Shape s;
    const float *A, *B;
} Fp32Run;

static void run_fp32(void *ctx, float beta, float *C)
{
    Fp32Run *r = (Fp32Run *)ctx;
    r->launch(r->s.M, r->s.N, r->s.K, ALPHA, r->A, r->B, beta, C);
}

/* Runs every selected version of the fp32 table (the last one its ceiling) on one shape. */
static int check_shape(const Options *o, Shape s, const SgemmVersion *versions, int count)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    unsigned long long seed = o->seed + (unsigned long long)s.M * 1000003ULL + s.N * 1009ULL + s.K;
    float *A = (float *)xmalloc(a_n * sizeof(float)), *B = (float *)xmalloc(b_n * sizeof(float));
    float *C0 = (float *)xmalloc(c_n * sizeof(float)), *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(A, a_n, -1.0f, 1.0f, seed);
    fill_uniform(B, b_n, -1.0f, 1.0f, seed + 1);
    fill_uniform(C0, c_n, -1.0f, 1.0f, seed + 2);
    Reference ref;
    build_reference(s, cpu_product_row, A, B, C0, ALPHA, BETA, &ref);
    float *picked = (float *)xmalloc(sizeof(float) * (size_t)ref.nrows * s.N);

    float *dA, *dB, *dC;
    CUDA_CHECK(cudaMalloc(&dA, a_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, b_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, A, a_n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, B, b_n * sizeof(float), cudaMemcpyHostToDevice));

    double tol = sgemm_tolerance(s.K);
    int failures = 0;
    for (int v = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name) || !version_fits(&versions[v])) continue;
        if (v == count - 1 && !check_ceiling_here(s)) continue;
        Fp32Run run = {versions[v].launch, s, dA, dB};
        failures +=
            check_two_passes(versions[v].name, s, run_fp32, &run, dC, C0, C, &ref, picked, tol);
    }
    if (ref.nrows < s.M)
        printf("       (%dx%dx%d: %d of %d rows compared)\n", s.M, s.N, s.K, ref.nrows, s.M);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free(picked);
    free(A);
    free(B);
    free(C0);
    free(C);
    return failures;
}

#endif
