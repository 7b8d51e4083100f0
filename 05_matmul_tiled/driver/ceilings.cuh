/* Chapter 05 driver, the ceilings: cuBLAS on the same shape, in the same precision as
 * the versions it judges. fp32: cublasSgemm with the default math mode (fp32 FMAs, TF32
 * off). Tensor cores: cublasGemmEx with bf16 inputs, or fp32 inputs computed as TF32,
 * fp32 accumulation and output, B given transposed as the tensor-core versions take it. */
#ifndef CH05_DRIVER_CEILINGS_CUH
#define CH05_DRIVER_CEILINGS_CUH

#include <cublas_v2.h>

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

#endif
