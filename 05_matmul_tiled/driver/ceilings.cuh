/* Chapter 05 driver, the ceilings: cuBLAS on the same shape, in the same precision as
 * the versions it judges. fp32: cublasSgemm with the default math mode (fp32 FMAs, TF32
 * off). Tensor cores: cublasGemmEx with bf16 inputs, or fp32 inputs computed as TF32,
 * fp32 accumulation and output, B given transposed as the tensor-core versions take it;
 * e4m3 inputs: cublasLtMatmul (cublasGemmEx has no FP8), fp32 output. */
#ifndef CH05_DRIVER_CEILINGS_CUH
#define CH05_DRIVER_CEILINGS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp8.h>

#include "05_matmul_tiled/tensor_cores/common.cuh"

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

/* The tensor-core contract in column-major cuBLAS: the row-major M x N C is the
 * column-major N x M C^T = B^T A^T. Bt (N x K row-major) is column-major B (K x N), used
 * transposed; A (M x K row-major) is column-major A^T, used as it is: "TN". */
static void gemm_cublas_ex(int M, int N, int K, float alpha, const void *A, const void *Bt,
                           cudaDataType type, cublasComputeType_t compute, float beta, float *C)
{
    cublasStatus_t st =
        cublasGemmEx(cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, Bt, type, K, A,
                     type, K, &beta, C, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasGemmEx failed (status %d)\n", (int)st);
        exit(1);
    }
}

static void gemm_cublas_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                             float beta, float *C)
{
    gemm_cublas_ex(M, N, K, alpha, A, Bt, CUDA_R_16BF, CUBLAS_COMPUTE_32F, beta, C);
}

static void gemm_cublas_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                             float beta, float *C)
{
    gemm_cublas_ex(M, N, K, alpha, A, Bt, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, beta, C);
}

/* ------------------------------------------------------------------ cuBLASLt, FP8 */

/* cuBLASLt's FP8 GEMM in the layout it requires for FP8 ("TN": its A transposed, its B not,
 * both K-contiguous, which is the contract's A and Bt as in gemm_cublas_ex), e4m3 inputs,
 * fp32 compute, scale and output: cublasLt.h lists fp32 among the output types of its FP8
 * kernels (the bias-type attribute's note), so C is the same fp32 C as for every other
 * version. Per-tensor scales: the scale pointers of A and B are set, to device floats of 1,
 * because the contract folds the scales into alpha (tensor_cores/14_wgmma_fp8.cuh); the
 * time does not depend on their values. Fast accumulation on (CUBLASLT_MATMUL_DESC_FAST_ACCUM):
 * no periodic promotion of the partial sums, the precision of our FP8 kernels. The
 * heuristic's best algorithm for the shape, with a 32 MB workspace; the plan is made once per
 * shape, so the timed call is the cublasLtMatmul alone. */
#define LT_WORKSPACE_BYTES (32u << 20)

#define LT_CHECK(call)                                                                   \
    do {                                                                                 \
        cublasStatus_t st_ = (call);                                                     \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s failed (status %d)\n", __FILE__, __LINE__, #call, \
                    (int)st_);                                                           \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

typedef struct {
    int M, N, K; /* the shape the plan is for (0: none yet) */
    int found;   /* whether the heuristic returned an algorithm */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulHeuristicResult_t heur;
} LtFp8Plan;

static cublasLtHandle_t cublaslt_handle(void)
{
    static cublasLtHandle_t handle = NULL;
    if (handle == NULL) LT_CHECK(cublasLtCreate(&handle));
    return handle;
}

/* The workspace and the device float 1 the scale pointers point at, allocated once. */
static void *cublaslt_workspace(void)
{
    static void *ws = NULL;
    if (ws == NULL) CUDA_CHECK(cudaMalloc(&ws, LT_WORKSPACE_BYTES));
    return ws;
}

static const float *cublaslt_one(void)
{
    static float *one = NULL;
    if (one == NULL) {
        const float h = 1.0f;
        CUDA_CHECK(cudaMalloc(&one, sizeof(float)));
        CUDA_CHECK(cudaMemcpy(one, &h, sizeof(float), cudaMemcpyHostToDevice));
    }
    return one;
}

/* The settings of the plan, in the order they are tried: the heuristic is asked first with
 * scale pointers and fast accumulation; if it finds nothing, without the scale pointers;
 * then without fast accumulation as well (a fallback is printed: the row is then not quite
 * the ceiling described above). */
static const char *const LT_FP8_SETTINGS[] = {
    "scale pointers set, fast accumulation",
    "no scale pointers, fast accumulation",
    "no scale pointers, fast accumulation off",
};

/* The plan of an M x N x K product (column-major for cuBLASLt: its A is our Bt, K x N with
 * leading dimension K, used transposed; its B our A, K x M; its C and D our C, N x M). */
static LtFp8Plan *cublaslt_fp8_plan(int M, int N, int K)
{
    static LtFp8Plan p; /* zero: no plan yet */
    if (p.M == M && p.N == N && p.K == K) return &p;
    if (p.M) {
        LT_CHECK(cublasLtMatrixLayoutDestroy(p.a));
        LT_CHECK(cublasLtMatrixLayoutDestroy(p.b));
        LT_CHECK(cublasLtMatrixLayoutDestroy(p.c));
        LT_CHECK(cublasLtMatmulDescDestroy(p.desc));
    }
    p.M = M, p.N = N, p.K = K, p.found = 0;
    LT_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, K, N, K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, K, M, K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, N, M, N));
    cublasLtMatmulPreference_t pref;
    uint64_t ws = LT_WORKSPACE_BYTES;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const float *one = cublaslt_one();
    for (int setting = 0; setting < 3 && !p.found; setting++) {
        if (setting > 0) LT_CHECK(cublasLtMatmulDescDestroy(p.desc));
        int8_t fast = setting < 2;
        LT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        LT_CHECK(
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LT_CHECK(
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        if (setting == 0) {
            LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                    &one, sizeof one));
            LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                    &one, sizeof one));
        }
        LT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                sizeof fast));
        int returned = 0;
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(), p.desc, p.a, p.b, p.c,
                                                           p.c, pref, 1, &p.heur, &returned);
        p.found = st == CUBLAS_STATUS_SUCCESS && returned > 0;
        if (p.found && setting > 0)
            printf("cublaslt_fp8 %dx%dx%d: no algorithm with %s; with %s\n", M, N, K,
                   LT_FP8_SETTINGS[0], LT_FP8_SETTINGS[setting]);
    }
    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    return &p;
}

/* NULL when cuBLASLt's FP8 GEMM can run this shape here, else why not (the FP8 table's
 * ceiling: the driver skips the table's shape with this reason). */
static const char *cublaslt_fp8_refusal(int M, int N, int K)
{
    int major = current_device_attribute(cudaDevAttrComputeCapabilityMajor);
    int minor = current_device_attribute(cudaDevAttrComputeCapabilityMinor);
    if (major * 10 + minor < 89) return "cuBLASLt's FP8 GEMM needs compute capability 8.9 or newer";
    if (K % 16 != 0) return "cuBLASLt's FP8 GEMM needs K % 16 == 0 (16-byte leading dimensions)";
    if (!cublaslt_fp8_plan(M, N, K)->found)
        return "cuBLASLt's heuristic has no FP8 algorithm for this shape";
    return NULL;
}

static void gemm_cublaslt_fp8(int M, int N, int K, float alpha, const __nv_fp8_e4m3 *A,
                              const __nv_fp8_e4m3 *Bt, float beta, float *C)
{
    LtFp8Plan *p = cublaslt_fp8_plan(M, N, K);
    if (!p->found) {
        fprintf(stderr, "cublaslt_fp8: %s (%dx%dx%d)\n", cublaslt_fp8_refusal(M, N, K), M, N, K);
        exit(1);
    }
    LT_CHECK(cublasLtMatmul(cublaslt_handle(), p->desc, &alpha, Bt, p->a, A, p->b, &beta, C, p->c,
                            C, p->c, &p->heur.algo, cublaslt_workspace(), LT_WORKSPACE_BYTES, 0));
}

#endif
