/* Chapter 05 driver, the check. Every element of a version's C is compared (normwise
 * relative error) with a reference computed in double precision on the GPU (gpu_reference:
 * a plain product in 16 x 16 tiles, one thread an element), and that reference is itself
 * compared with one computed in double on the CPU: on every row while M*N*K <= 2^28, on
 * evenly spaced rows above (all of them would take the CPU minutes at 4096^3). The CPU's
 * rows (build_reference) see the operands only through a ProductRow function, the GPU's
 * through an input type and its conversion to double, so versions with other input types
 * or layouts (B given transposed, say) use both with their own. check_shape runs a table
 * of versions on one shape. */
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
 * step is odd, so the sampled rows fall at every offset inside the row tiles of the
 * GPU's reference (and of the versions). */
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

/* The CPU's reference: the rows it covers, and their values. */
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

/* Normwise relative error of the sampled rows of a GPU result (the precision report's
 * measure; the check compares every element, against the GPU's reference below). */
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

/* ------------------------------------------------------------------ the reference on the GPU */

/* How the GPU's reference reads an input: as its exact value in double. The fp32 ladder's
 * inputs are floats; the tensor-core tables' are read through TcHost<T>::to (tc_driver.cuh),
 * as their CPU rows are. */
struct Fp32Input {
    __host__ __device__ static double to(float x) { return (double)x; }
};

#define REF_TILE 16

/* out = alpha A B in double (out: M x N), one thread an element, the operands staged in
 * shared memory in 16 x 16 tiles, as doubles. B is K x N, or when B_TRANSPOSED given as Bt
 * (N x K). Every element sums its products in the CPU's order (k ascending), each product
 * exact in double (two significands of 24 bits or fewer fit in 53), so this and the CPU's
 * rows agree to the last bit; the zeros that pad the last tile add nothing. */
template <typename T, typename In, bool B_TRANSPOSED> __global__ void
reference_fp64_kernel(int M, int N, int K, double alpha, const T *A, const T *B, double *out)
{
    __shared__ double a[REF_TILE][REF_TILE + 1], b[REF_TILE][REF_TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int m = blockIdx.y * REF_TILE + ty, n = blockIdx.x * REF_TILE + tx;
    double acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += REF_TILE) {
        /* a[i][kk] = A[m0 + i][k0 + kk] and b[kk][j] = B[k0 + kk][n0 + j], zeros outside;
         * Bt is read along k (thread (tx, ty) reads Bt[n0 + ty][k0 + tx]), so that a warp's
         * loads are consecutive in both layouts */
        a[ty][tx] = m < M && k0 + tx < K ? In::to(A[(size_t)m * K + k0 + tx]) : 0.0;
        if (B_TRANSPOSED) {
            int nt = blockIdx.x * REF_TILE + ty;
            b[tx][ty] = nt < N && k0 + tx < K ? In::to(B[(size_t)nt * K + k0 + tx]) : 0.0;
        } else {
            b[ty][tx] = k0 + ty < K && n < N ? In::to(B[(size_t)(k0 + ty) * N + n]) : 0.0;
        }
        __syncthreads();
        for (int kk = 0; kk < REF_TILE; kk++) acc += a[ty][kk] * b[kk][tx];
        __syncthreads();
    }
    if (m < M && n < N) out[(size_t)m * N + n] = alpha * acc;
}

/* The reference of every element of C: alpha A B (for beta = 0) and alpha A B + beta C0,
 * M x N, on the host. */
typedef struct {
    double *zero, *beta;
} FullReference;

static void free_full_reference(FullReference *f)
{
    free(f->zero);
    free(f->beta);
}

/* The GPU reference against the CPU's rows: both sum the same exact products in double in
 * the same order and should agree to the last bit. The tolerance is sgemm_tolerance's rule
 * at double's unit, 2^-53 (a K-term sum in another order): about 5e8 times below what a
 * version is allowed, so a GPU reference with one product wrong in a row the CPU computes
 * fails. */
static double reference_tolerance(int K) { return 16.0 * sqrt((double)K + 2.0) * 0x1p-53; }

/* ||x - ref|| / ||ref|| on the CPU's rows (x: M x N; ref: the CPU's nrows x N). */
static double reference_rows_error(Shape s, const double *x, const Reference *r, const double *ref)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < r->nrows; i++)
        for (int n = 0; n < s.N; n++) {
            double g = x[(size_t)r->rows[i] * s.N + n], e = ref[(size_t)i * s.N + n];
            if (!isfinite(g)) return INFINITY;
            num += (g - e) * (g - e);
            den += e * e;
        }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The GPU reference computes at most this many elements at a time (128 MB of doubles on
 * the device beside A, B and C), a band of rows after another. */
#define REF_CHUNK_ELEMENTS ((size_t)1 << 24)

/* The reference of every element, computed on the GPU from the device's dA and dB (of type
 * T, read through In) and downloaded into f, then compared with the CPU's rows `cpu` (made
 * by build_reference from the same operands, alpha and beta): prints that comparison's line
 * as `what` and returns 1 if it is within reference_tolerance. Once a shape, for every
 * version checked on it. */
template <typename T, typename In, bool B_TRANSPOSED>
static int gpu_reference(const char *what, Shape s, const T *dA, const T *dB, const float *C0,
                         float alpha, float beta, const Reference *cpu, FullReference *f)
{
    size_t c_n = (size_t)s.M * s.N;
    f->zero = (double *)xmalloc(c_n * sizeof(double));
    f->beta = (double *)xmalloc(c_n * sizeof(double));
    int band = s.M;
    if (c_n > REF_CHUNK_ELEMENTS) band = (int)(REF_CHUNK_ELEMENTS / (size_t)s.N);
    if (band < 1) band = 1;
    double *d;
    CUDA_CHECK(cudaMalloc(&d, (size_t)band * s.N * sizeof(double)));
    for (int m0 = 0; m0 < s.M; m0 += band) {
        int rows = s.M - m0 < band ? s.M - m0 : band;
        dim3 block(REF_TILE, REF_TILE);
        dim3 grid((s.N + REF_TILE - 1) / REF_TILE, (rows + REF_TILE - 1) / REF_TILE);
        reference_fp64_kernel<T, In, B_TRANSPOSED>
            <<<grid, block>>>(rows, s.N, s.K, (double)alpha, dA + (size_t)m0 * s.K, dB, d);
        CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpy(f->zero + (size_t)m0 * s.N, d, (size_t)rows * s.N * sizeof(double),
                              cudaMemcpyDeviceToHost));
    }
    CUDA_CHECK(cudaFree(d));
    /* beta C0 added as build_reference adds it */
    for (size_t i = 0; i < c_n; i++) f->beta[i] = f->zero[i] + (double)beta * C0[i];
    double err = fmax(reference_rows_error(s, f->zero, cpu, cpu->ref_zero),
                      reference_rows_error(s, f->beta, cpu, cpu->ref_beta));
    char size[48];
    shape_str(s, size, sizeof size);
    return report_check(what, size, err, reference_tolerance(s.K));
}

/* After a shape's versions, where the CPU computed only some rows: what was compared. */
static void print_reference_note(Shape s, const Reference *cpu)
{
    if (cpu->nrows < s.M)
        printf("       (%dx%dx%d: every element against the GPU's fp64 reference; the CPU "
               "checked it on %d of %d rows)\n",
               s.M, s.N, s.K, cpu->nrows, s.M);
}

/* Launches one version with ALPHA and the given beta into the device buffer C. */
typedef void (*RunInto)(void *ctx, float beta, float *C);

/* One version on one shape, twice: on a poisoned C with beta = 0 (every element must be
 * written, C must not be read) and on C0 with beta = BETA, every element of C compared with
 * the reference (norm_or_worst_error, common/validate.h). dC is the device C, C a host
 * buffer of M x N; returns the number of failed comparisons. */
static int check_two_passes(const char *name, Shape s, RunInto run, void *ctx, float *dC,
                            const float *C0, float *C, const FullReference *ref, double tol)
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
        double err = norm_or_worst_error(C, pass ? ref->beta : ref->zero, (size_t)s.M * s.N);
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

    float *dA, *dB, *dC;
    CUDA_CHECK(cudaMalloc(&dA, a_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, b_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, A, a_n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, B, b_n * sizeof(float), cudaMemcpyHostToDevice));

    FullReference full;
    int failures = !gpu_reference<float, Fp32Input, false>("fp64 reference (GPU)", s, dA, dB, C0,
                                                           ALPHA, BETA, &ref, &full);
    double tol = sgemm_tolerance(s.K);
    for (int v = 0; v < count; v++) {
        if (!kernel_selected(o, versions[v].name) || !version_fits(&versions[v])) continue;
        if (v == count - 1 && !check_ceiling_here(s)) continue;
        Fp32Run run = {versions[v].launch, s, dA, dB};
        failures += check_two_passes(versions[v].name, s, run_fp32, &run, dC, C0, C, &full, tol);
    }
    print_reference_note(s, &ref);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free_full_reference(&full);
    free(A);
    free(B);
    free(C0);
    free(C);
    return failures;
}

#endif
