/* Chapter 05 driver: fp32 SGEMM, C = alpha * A * B + beta * C, row-major.
 * --check validates every version against a double-precision CPU product (normwise
 * relative error) on awkward shapes; --bench times every version against cuBLAS SGEMM
 * (fp32 compute, no TF32) on the same shape in the same run.
 * This file holds the version table, the shapes, the command line and main; check.cuh the
 * CPU reference and the check, bench.cuh the timing, driver.cuh what the three share. */
#include <cublas_v2.h>

#include "bench.cuh"
#include "check.cuh"
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "driver.cuh"
#include "kernels.cuh"

static void sgemm_cublas(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C);

/* The fp32 ladder in order, the dispatcher, and last the ceiling (check_shape and
 * bench_shape take a table's last version as its ceiling). */
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
            failures += check_shape(&o, s, VERSIONS, NVERSIONS);
        }
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        double last_ms[NVERSIONS] = {0.0};
        if (o.nsizes) {
            for (int i = 0; i < o.nsizes; i++)
                bench_shape(&o, &info, shape_of(&o.sizes[i]), VERSIONS, NVERSIONS, NULL);
        } else {
            for (int i = 0; i < NSWEEP; i++) {
                Shape s = {SWEEP_SIZES[i], SWEEP_SIZES[i], SWEEP_SIZES[i]};
                bench_shape(&o, &info, s, VERSIONS, NVERSIONS, last_ms);
            }
            for (int i = 5; i < 5 + NMLP; i++) {
                Shape s = {CHECK_SHAPES[i][0], CHECK_SHAPES[i][1], CHECK_SHAPES[i][2]};
                bench_shape(&o, &info, s, VERSIONS, NVERSIONS, NULL);
            }
        }
    }
    return failures ? 1 : 0;
}
