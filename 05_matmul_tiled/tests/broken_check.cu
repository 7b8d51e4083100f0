/* A test of chapter 05's --check, built only for `make test` (the Makefile's test-binaries
 * target writes tests/build/matmul_broken_check): an fp32 version that computes every
 * element of C but one, C[1][1], which it never writes. At 4096^3 the CPU computes its
 * reference on every 257th row only (reference_row_step), and row 1 is not one of them, so
 * only the comparison of every element with the GPU's fp64 reference can see the hole:
 *   tests/build/matmul_broken_check --check --kernel skip_one -n 4096    must exit 1
 * with a FAIL line for skip_one (tests/gpu_tests.txt runs it where there is a GPU). And a
 * version with 64 wrong elements whose normwise error passes, wrong_chunk, which the worst
 * element's error must fail (--kernel wrong_chunk, exit 1). Before
 * the check, the test measures what a comparison of the CPU's rows alone would say, and
 * exits 3 where the CPU computes some rows only and those fail skip_one: the test would
 * then prove nothing about the rows the CPU leaves out. The table's last row, the ladder's
 * naive version, stands for the ceiling check_shape expects there: a correct version, run
 * when --kernel does not pick skip_one alone. */
#include "05_matmul_tiled/driver/check.cuh"
#include "05_matmul_tiled/fp32/01_naive.cuh"

#define SKIP_ROW 1
#define SKIP_COL 1

/* One thread an element of C, n along the warp; the thread of C[SKIP_ROW][SKIP_COL]
 * returns without writing. */
__global__ void sgemm_skip_one_kernel(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N || (m == SKIP_ROW && n == SKIP_COL)) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
    float *c = C + (size_t)m * N + n;
    *c = sgemm_axpby(alpha, acc, beta, c);
}

static void sgemm_skip_one(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C)
{
    dim3 block(32, 8), grid(sgemm_ceil_div(N, 32), sgemm_ceil_div(M, 8));
    sgemm_skip_one_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* Every element right but one 8 x 8 patch (rows 128-135, columns 40-47), which reads C from
 * the 8 columns to its left: what an epilogue that reads a stale buffer of C computes. Right
 * where beta = 0. With beta = -0.5 at 4096^3 the patch's 64 errors of about 0.4 (half the
 * difference of two uniform values in [-1, 1)) against a product of norm about 21.3 x 4096
 * give a normwise error near 8 x 0.4 / 87000 = 3.7e-5, under the tolerance (6.1e-5): only
 * the worst element's error (0.4 / 21.3 / (4 sqrt(2 ln 4096^2)) = 8e-4) fails it. One block
 * covers columns 0-63, so the barrier puts all its reads of C before its writes. */
__global__ void sgemm_wrong_chunk_kernel(int M, int N, int K, float alpha, const float *A,
                                         const float *B, float beta, float *C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    bool inside = m < M && n < N, stale = m >= 128 && m < 136 && n >= 40 && n < 48;
    float acc = 0.0f, old = 0.0f;
    if (inside) {
        for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
        if (beta != 0.0f) old = C[(size_t)m * N + n - (stale ? 8 : 0)];
    }
    __syncthreads();
    if (inside) C[(size_t)m * N + n] = alpha * acc + beta * old;
}

static void sgemm_wrong_chunk(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    dim3 block(64, 4), grid(sgemm_ceil_div(N, 64), sgemm_ceil_div(M, 4));
    sgemm_wrong_chunk_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

static const SgemmVersion VERSIONS[] = {
    {"skip_one", "step", sgemm_skip_one, {0}},
    {"wrong_chunk", "step", sgemm_wrong_chunk, {0}},
    {"naive", "ceiling", sgemm_naive, {0}},
};
#define NVERSIONS VERSION_COUNT(VERSIONS)
static NameList KERNEL_NAMES;

/* skip_one's beta = 0 pass on a poisoned C, the inputs check_shape makes, compared on the
 * CPU's rows alone; prints that and returns 1 if those rows pass. */
static int cpu_rows_pass(const Options *o, Shape s)
{
    size_t a_n = (size_t)s.M * s.K, b_n = (size_t)s.K * s.N, c_n = (size_t)s.M * s.N;
    unsigned long long seed = o->seed + (unsigned long long)s.M * 1000003ULL + s.N * 1009ULL + s.K;
    float *A = (float *)xmalloc(a_n * sizeof(float)), *B = (float *)xmalloc(b_n * sizeof(float));
    float *C0 = (float *)calloc(c_n, sizeof(float)), *C = (float *)xmalloc(c_n * sizeof(float));
    fill_uniform(A, a_n, -1.0f, 1.0f, seed);
    fill_uniform(B, b_n, -1.0f, 1.0f, seed + 1);
    Reference ref;
    build_reference(s, cpu_product_row, A, B, C0, ALPHA, 0.0f, &ref);
    float *dA, *dB, *dC, *picked = (float *)xmalloc(sizeof(float) * (size_t)ref.nrows * s.N);
    CUDA_CHECK(cudaMalloc(&dA, a_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dB, b_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dC, c_n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dA, A, a_n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, B, b_n * sizeof(float), cudaMemcpyHostToDevice));
    poison_device(dC, c_n * sizeof(float));
    sgemm_skip_one(s.M, s.N, s.K, ALPHA, dA, dB, 0.0f, dC);
    CUDA_CHECK(cudaMemcpy(C, dC, c_n * sizeof(float), cudaMemcpyDeviceToHost));
    double err = sampled_error(s, C, &ref, ref.ref_zero, picked), tol = sgemm_tolerance(s.K);
    int sampled = 0;
    for (int i = 0; i < ref.nrows; i++) sampled |= ref.rows[i] == SKIP_ROW;
    printf("\n%dx%dx%d: the CPU computes %d of %d rows (row %d %s); skip_one beta=0 on them "
           "alone:\nerror %.3e (tolerance %.1e): %s\n",
           s.M, s.N, s.K, ref.nrows, s.M, SKIP_ROW, sampled ? "among them" : "not among them", err,
           tol, err <= tol ? "would pass" : "fails");
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free_reference(&ref);
    free(picked);
    free(A);
    free(B);
    free(C0);
    free(C);
    return err <= tol;
}

static const ProgramSpec SPEC = {
    "matmul_broken_check",
    "A test of chapter 05's --check: skip_one leaves C[1][1] unwritten, wrong_chunk reads one "
    "chunk of C from the wrong place; both must fail.",
    "shapes: N (square) or MxNxK (default 4096)",
    NULL,
    KERNEL_NAMES.name,
    3,
    65536LL,
    NULL,
    NULL};

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, VERSIONS, NVERSIONS);
    parse_args(argc, argv, &SPEC, &o);
    if (!o.check) cli_fail(&SPEC, "this test only checks: pass --check");
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i].ndims == 2) cli_fail(&SPEC, "give N or MxNxK");
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);
    int n = o.nsizes ? o.nsizes : 1, failures = 0;
    for (int i = 0; i < n; i++) {
        Shape s = o.nsizes ? shape_of(&o.sizes[i]) : (Shape){4096, 4096, 4096};
        require_device_memory(&SPEC, &info, shape_bytes(s), "A, B and C");
        if (!cpu_rows_pass(&o, s) && reference_row_step(s) > 1) {
            printf("the CPU's rows alone fail skip_one here: this test would prove nothing\n");
            return 3;
        }
        failures += check_shape(&o, s, VERSIONS, NVERSIONS);
    }
    printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
