/* Chapter 05 driver: C = alpha * A * B + beta * C, row-major, in two ladders: fp32 on the
 * CUDA cores (A and B), and bf16 / TF32 / e4m3 on the tensor cores (A and Bt, B transposed).
 * --check validates every version against a double-precision CPU product (normwise
 * relative error) on awkward shapes; --bench times every version against cuBLAS in the
 * same precision (SGEMM with TF32 off for fp32, GemmEx for bf16 and TF32, cuBLASLt for
 * e4m3) on the same shape in the same run; --sweep adds the fp32 shape sweep, --sweep-tc the
 * tensor-core one.
 * This file holds the version tables, the shapes, the command line and main; check.cuh the
 * CPU reference and the check, bench.cuh the timing, driver.cuh what they share,
 * ceilings.cuh the cuBLAS calls, driver/tc_driver.cuh the tensor-core tables' check and bench,
 * shape_sweep.cuh the shape sweep, tc_sweep.cuh the tensor-core sweep. */
#include "05_matmul_tiled/driver/bench.cuh"
#include "05_matmul_tiled/driver/ceilings.cuh"
#include "05_matmul_tiled/driver/check.cuh"
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/driver/driver.cuh"
#include "05_matmul_tiled/kernels.cuh"
#include "05_matmul_tiled/driver/shape_sweep.cuh"
#include "05_matmul_tiled/driver/tc_driver.cuh"
#include "05_matmul_tiled/driver/tc_sweep.cuh"
#include "05_matmul_tiled/solutions/solutions.cuh"

/* The fp32 ladder in order, the dispatcher, the exercises' answers, and last the ceiling
 * (check_shape and bench_shape take a table's last version as its ceiling). */
static const SgemmVersion VERSIONS[] = {
    {"naive", "naive", sgemm_naive, {0}},
    {"coalesced", "step", sgemm_coalesced, {0}},
    {"smem", "step", sgemm_smem, {0}},
    {"blocktile_1d", "step", sgemm_blocktile_1d, {0}},
    {"blocktile_2d", "step", sgemm_blocktile_2d, {0}},
    {"vectorized", "step", sgemm_vectorized, {0}},
    {"padded", "step", sgemm_padded, {0}},
    {"warptile", "step", sgemm_warptile, {0}},
    {"double_buffer", "step", sgemm_double_buffer, {SgemmWarptileCfg::SMEM_BYTES}},
    {"hopper", "optimized", sgemm_hopper, {SgemmHopperCfg::SMEM_BYTES}},
    {"hopper_small", "step", sgemm_hopper_small, {SgemmSmallCfg::SMEM_BYTES}},
    {"splitk", "step", sgemm_splitk, {SgemmSmallCfg::SMEM_BYTES}},
    {"splitk_8x8", "step", sgemm_splitk_8x8, {SgemmSplitWideCfg::SMEM_BYTES}},
    {"streamk", "step", sgemm_streamk, {SgemmSplitWideCfg::SMEM_BYTES}},
    {"thin_m", "step", sgemm_thin_m, {SgemmThinMCfg::SMEM_BYTES}},
    {"thin_n", "step", sgemm_thin_n, {SgemmThinNCfg::SMEM_BYTES}},
    {"thin_n_8x8", "step", sgemm_thin_n_8x8, {SgemmThinN8x8Cfg::SMEM_BYTES}},
    {"gemv", "step", sgemm_gemv, {0}},
    {"best", "step", sgemm_best, {0}},
    /* the exercises' answers (solutions/, README "Exercises") */
    {"ex1_blocktile_8x4", "exercise", ex1_blocktile_8x4, {0}},
    {"ex1_blocktile_4x8", "exercise", ex1_blocktile_4x8, {0}},
    {"ex2_hopper_2stages", "exercise", ex2_hopper_2stages, {Ex2TwoStagesCfg::SMEM_BYTES}},
    {"ex2_hopper_no_prefetch", "exercise", ex2_hopper_no_prefetch, {Ex2NoPrefetchCfg::SMEM_BYTES}},
    {"ex3_vector_loads", "exercise", ex3_vector_loads, {0}},
    {"ex4_register_prefetch", "exercise", ex4_register_prefetch, {0}},
    {"ex5_three_stages", "exercise", ex5_three_stages, {Ex5Cfg::SMEM_BYTES}},
    {"ex6_few_columns", "exercise", ex6_few_columns, {0}},
    {"cublas", "ceiling", sgemm_cublas, {0}},
};
#define NVERSIONS VERSION_COUNT(VERSIONS)

/* The tensor-core ladder (tc_*.cuh), one table per input type, each ending with its
 * ceiling: cuBLAS in the same precision. */
static const TcVersion<bf16> TC_BF16[] = {
    {"wmma_bf16", "step", tc_wmma_bf16, {false}},
    {"mma_bf16", "step", tc_mma_bf16, {false}},
    {"mma_swizzle_bf16", "step", tc_mma_swizzle_bf16, {false}},
    {"mma_pipeline_bf16", "step", tc_mma_pipeline_bf16, {false}},
    {"wgmma_bf16", "step", tc_wgmma_bf16, {true}},
    {"wgmma_ws_bf16", "step", tc_wgmma_ws_bf16, {true}},
    {"wgmma_persistent_bf16", "optimized", tc_wgmma_persistent_bf16, {true}},
    {"wgmma_cluster_bf16", "step", tc_wgmma_cluster_bf16, {true}},
    {"wgmma_splitk_bf16", "step", tc_wgmma_splitk_bf16, {true}},
    {"wgmma_padded_bf16", "step", tc_wgmma_padded_bf16, {TC_HOPPER_ANY_K}},
    {"wgmma_ws_128x128_bf16", "step", tc_wgmma_ws_128x128_bf16, {true}},
    {"wgmma_prefetch_bf16", "step", tc_wgmma_prefetch_bf16, {true}},
    {"wgmma_pingpong_bf16", "step", tc_wgmma_pingpong_bf16, {true}},
    {"mma_skinny_bf16", "step", tc_mma_skinny_bf16, {false}},
    {"wgmma_wide_bf16", "step", tc_wgmma_wide_bf16, {true}},
    {"wgmma_wide_cluster_bf16", "step", tc_wgmma_wide_cluster_bf16, {true}},
    {"wgmma_streamk_bf16", "step", tc_wgmma_streamk_bf16, {true}},
    {"wgmma_streamk_stagger_bf16", "step", tc_wgmma_streamk_stagger_bf16, {true}},
    {"wgmma_cload_bf16", "step", tc_wgmma_cload_bf16, {true}},
    {"best_bf16", "step", tc_best_bf16, {false}},
    {"cublas_bf16", "ceiling", gemm_cublas_bf16, {false}},
};
static const TcVersion<float> TC_TF32[] = {
    {"wmma_tf32", "step", tc_wmma_tf32, {false}},
    {"mma_pipeline_tf32", "step", tc_mma_pipeline_tf32, {false}},
    {"wgmma_tf32", "step", tc_wgmma_tf32, {true}},
    {"wgmma_ws_tf32", "step", tc_wgmma_ws_tf32, {true}},
    {"wgmma_persistent_tf32", "optimized", tc_wgmma_persistent_tf32, {true}},
    {"wgmma_cluster_tf32", "step", tc_wgmma_cluster_tf32, {true}},
    {"wgmma_splitk_tf32", "step", tc_wgmma_splitk_tf32, {true}},
    {"wgmma_padded_tf32", "step", tc_wgmma_padded_tf32, {TC_HOPPER_ANY_K}},
    {"wgmma_ws_128x128_tf32", "step", tc_wgmma_ws_128x128_tf32, {true}},
    {"mma_skinny_tf32", "step", tc_mma_skinny_tf32, {false}},
    {"wgmma_cload_tf32", "step", tc_wgmma_cload_tf32, {true}},
    {"best_tf32", "step", tc_best_tf32, {false}},
    {"cublas_tf32", "ceiling", gemm_cublas_tf32, {false}},
};
/* e4m3 (tensor_cores/14_wgmma_fp8.cuh): the persistent kernel and steps 12-13 on FP8 inputs,
 * against cuBLASLt's FP8 GEMM. */
static const TcVersion<e4m3> TC_FP8[] = {
    {"wgmma_fp8", "step", tc_wgmma_fp8, {true}},
    {"wgmma_prefetch_fp8", "step", tc_wgmma_prefetch_fp8, {true}},
    {"wgmma_pingpong_fp8", "step", tc_wgmma_pingpong_fp8, {true}},
    {"cublaslt_fp8", "ceiling", gemm_cublaslt_fp8, {false}},
};
#define NTC_BF16 VERSION_COUNT(TC_BF16)
#define NTC_TF32 VERSION_COUNT(TC_TF32)
#define NTC_FP8 VERSION_COUNT(TC_FP8)
/* Every table's names, for --kernel and --help (filled by main). */
static NameList KERNEL_NAMES;

/* The shapes that break lazy indexing, then chapter 07's MLP shapes (batch 256 and 32,
 * forward and the transposed-operand backward products, all as NN), then the bench size. */
static const int CHECK_SHAPES[][3] = {
    {1, 1, 1},       {7, 13, 5},       {127, 129, 131}, {1000, 1, 4097},
    {513, 1000, 77}, {256, 1024, 784}, {256, 10, 1024}, {784, 1024, 256},
    {256, 1024, 10}, {1024, 10, 256},  {32, 1024, 784}, {784, 1024, 32},
    {32, 10, 1024},  {1024, 10, 32},   {32, 1024, 10},  {4096, 4096, 4096}};
#define NCHECK (int)(sizeof CHECK_SHAPES / sizeof CHECK_SHAPES[0])
#define NMLP 10 /* CHECK_SHAPES[5 .. 14] */
static const int SWEEP_SIZES[] = {256, 512, 1024, 2048, 4096, 8192};
#define NSWEEP (int)(sizeof SWEEP_SIZES / sizeof SWEEP_SIZES[0])

/* The tensor-core check: the awkward shapes (K = 1 and K not a multiple of 8, which the
 * TMA versions skip with the reason and the padded step copies, primes, a 1-column C, a
 * tall-skinny product), then chapter 07's tensor-core products in their A/Bt form (forward
 * x W1 and dW1^T = dz1^T x, at batch 256, its last partial batch of 96, and batch 32), then
 * the bench size. */
static const int TC_CHECK_SHAPES[][3] = {
    {1, 1, 1},       {7, 13, 5},       {64, 64, 1},      {1, 1, 8},
    {127, 129, 131}, {129, 257, 72},   {300, 20, 784},   {1000, 1, 4097},
    {4096, 16, 512}, {256, 1024, 784}, {1024, 784, 256}, {96, 1024, 784},
    {1024, 784, 96}, {32, 1024, 784},  {1024, 784, 32},  {4096, 4096, 4096}};
#define NTC_CHECK (int)(sizeof TC_CHECK_SHAPES / sizeof TC_CHECK_SHAPES[0])
/* The tensor-core bench: squares, then chapter 07's tensor-core products. */
static const int TC_BENCH_SHAPES[][3] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                                         {256, 1024, 784},   {1024, 784, 256},   {32, 1024, 784},
                                         {1024, 784, 32}};
#define NTC_BENCH (int)(sizeof TC_BENCH_SHAPES / sizeof TC_BENCH_SHAPES[0])

/* The chapter's own flags: --sweep (the fp32 shape sweep: driver/shape_sweep.h and .cuh),
 * --sweep-tc and --sweep-tc-all (the tensor-core sweep: driver/tc_sweep.h and .cuh), and
 * --sweep-only (the sweeps without the default shapes). */
typedef struct {
    int fp32, tc, tc_all, only;
} Sweeps;
static Sweeps sweep = {0, 0, 0, 0};

static int parse_chapter_flag(int argc, char **argv, int *i, char *err, size_t errlen, void *ctx)
{
    (void)argc, (void)err, (void)errlen;
    Sweeps *w = (Sweeps *)ctx;
    if (!strcmp(argv[*i], "--sweep"))
        w->fp32 = 1;
    else if (!strcmp(argv[*i], "--sweep-tc"))
        w->tc = 1;
    else if (!strcmp(argv[*i], "--sweep-tc-all"))
        w->tc = w->tc_all = 1;
    else if (!strcmp(argv[*i], "--sweep-only"))
        w->only = 1;
    else
        return 0;
    return 1;
}

static const ProgramSpec SPEC = {
    "matmul_tiled",
    "Chapter 05: C = alpha*A*B + beta*C, an fp32 ladder from naive to Hopper-tuned against cuBLAS "
    "SGEMM, and a tensor-core ladder (bf16, TF32, e4m3) from WMMA to wgmma + TMA against cuBLAS "
    "in the same precision.",
    "shapes: N (square) or MxNxK (A is MxK, B KxN), each dimension up to 65536\n"
    "                   (check default: 1x1x1, 7x13x5, 127x129x131, 1000x1x4097, 513x1000x77,\n"
    "                   the chapter-07 MLP shapes, 4096, and for the tensor cores K = 1, "
    "K % 8 != 0,\n"
    "                   tall-skinny and chapter 07's tensor-core products; bench default: squares\n"
    "                   256..8192 and the MLP shapes, tensor cores 2048..8192 and the MLP shapes)",
    "  --sweep          also the fp32 shape sweep: squares N-1, N, N+1 around 1024..8192,\n"
    "                   products with one dimension in 16..128, and 48 random shapes\n"
    "                   (dimensions log-uniform in 1..8192, drawn from --seed); --check runs the\n"
    "                   versions sgemm_best uses on each, --bench times best, hopper and cuBLAS\n"
    "                   on each and sums up best's % of cuBLAS over every shape it timed\n"
    "  --sweep-tc       also the tensor-core shape sweep, bf16 and TF32: squares N-1, N, N+1\n"
    "                   around 1024..8192, products with small dimensions, K = 1..7 (mod 8),\n"
    "                   chapter 07's products and 16 random shapes (drawn from --seed);\n"
    "                   --check runs every version tc_best may run on each, --bench times\n"
    "                   best and cuBLAS on each and sums up best's % of cuBLAS\n"
    "  --sweep-tc-all   the same, and --bench times every version --check runs (the rows\n"
    "                   records/tc_calibrate.py fits tc_best's model to)\n"
    "  --sweep-only     the sweeps alone, without the default shapes\n",
    KERNEL_NAMES.name,
    3,
    65536LL,
    parse_chapter_flag,
    &sweep};

/* Whether --kernel selects a version of this table (without --kernel: every table). */
template <typename V> static int table_selected(const Options *o, const V *table, int count)
{
    for (int v = 0; v < count; v++)
        if (kernel_selected(o, table[v].name)) return 1;
    return 0;
}

/* The i-th shape of a run: from -n if given, else from the defaults. */
static Shape shape_at(const Options *o, const int (*defaults)[3], int i)
{
    return o->nsizes ? shape_of(&o->sizes[i])
                     : (Shape){defaults[i][0], defaults[i][1], defaults[i][2]};
}

static int run_checks(const Options *o)
{
    printf("\ncheck (seed %llu, alpha %g, beta 0 on a poisoned C and beta %g): normwise "
           "relative error of every\nelement against a double-precision product on the GPU, "
           "itself checked against one on the CPU\n(every row while M*N*K <= 2^28, else "
           "evenly spaced rows)\n",
           o->seed, ALPHA, BETA);
    int failures = 0;
    if (table_selected(o, VERSIONS, NVERSIONS)) {
        for (int i = 0; i < (sweep.only ? 0 : o->nsizes ? o->nsizes : NCHECK); i++)
            failures += check_shape(o, shape_at(o, CHECK_SHAPES, i), VERSIONS, NVERSIONS);
        if (sweep.fp32) failures += check_sweep(o, VERSIONS, NVERSIONS);
    }
    int bf16 = table_selected(o, TC_BF16, NTC_BF16), tf32 = table_selected(o, TC_TF32, NTC_TF32);
    int fp8 = table_selected(o, TC_FP8, NTC_FP8);
    if (bf16 || tf32 || fp8) {
        printf("\ntensor cores (A and Bt; inputs rounded to bf16, TF32 or e4m3 first, the "
               "reference computed\nfrom the rounded inputs):\n");
        for (int i = 0; i < (sweep.only ? 0 : o->nsizes ? o->nsizes : NTC_CHECK); i++) {
            Shape s = shape_at(o, TC_CHECK_SHAPES, i);
            if (bf16) failures += tc_check_shape(o, s, TC_BF16, NTC_BF16);
            if (tf32) failures += tc_check_shape(o, s, TC_TF32, NTC_TF32);
            if (fp8) failures += tc_check_shape(o, s, TC_FP8, NTC_FP8);
        }
        if (sweep.tc)
            failures +=
                tc_check_sweep(o, bf16 ? TC_BF16 : NULL, NTC_BF16, tf32 ? TC_TF32 : NULL, NTC_TF32);
        if (!o->kernel && !o->nsizes && !sweep.only) tc_precision_report(o->seed);
    }
    printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    return failures;
}

static void run_bench(const Options *o, const DeviceInfo *info)
{
    if (table_selected(o, VERSIONS, NVERSIONS)) {
        double last_ms[NVERSIONS] = {0.0};
        if (o->nsizes && !sweep.only) {
            for (int i = 0; i < o->nsizes; i++)
                bench_shape(o, info, shape_of(&o->sizes[i]), VERSIONS, NVERSIONS, NULL);
        } else if (!sweep.only) {
            for (int i = 0; i < NSWEEP; i++) {
                Shape s = {SWEEP_SIZES[i], SWEEP_SIZES[i], SWEEP_SIZES[i]};
                bench_shape(o, info, s, VERSIONS, NVERSIONS, last_ms);
            }
            for (int i = 5; i < 5 + NMLP; i++)
                bench_shape(o, info, shape_at(o, CHECK_SHAPES, i), VERSIONS, NVERSIONS, NULL);
        }
        if (sweep.fp32) bench_sweep(o, info, VERSIONS, NVERSIONS);
    }
    if (!sweep.only && !tc_wgmma_unavailable() &&
        (kernel_selected(o, "wgmma_cluster_bf16") || kernel_selected(o, "wgmma_cluster_tf32"))) {
        int clusters = tc_wgmma_cluster_fit<bf16>();
        printf("\nwgmma_cluster: %d clusters of two blocks are resident at once, on %d of the "
               "%d SMs\n",
               clusters, 2 * clusters, sgemm_sm_count());
    }
    int bf16 = table_selected(o, TC_BF16, NTC_BF16), tf32 = table_selected(o, TC_TF32, NTC_TF32);
    for (int i = 0; i < (sweep.only ? 0 : o->nsizes ? o->nsizes : NTC_BENCH); i++) {
        Shape s = shape_at(o, TC_BENCH_SHAPES, i);
        if (bf16) tc_bench_shape(o, info, s, TC_BF16, NTC_BF16);
        if (tf32) tc_bench_shape(o, info, s, TC_TF32, NTC_TF32);
        if (table_selected(o, TC_FP8, NTC_FP8)) tc_bench_shape(o, info, s, TC_FP8, NTC_FP8);
    }
    if (sweep.tc && (bf16 || tf32))
        tc_bench_sweep(o, info, bf16 ? TC_BF16 : NULL, NTC_BF16, tf32 ? TC_TF32 : NULL, NTC_TF32,
                       sweep.tc_all);
}

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, VERSIONS, NVERSIONS);
    name_list_add(&KERNEL_NAMES, TC_BF16, NTC_BF16);
    name_list_add(&KERNEL_NAMES, TC_TF32, NTC_TF32);
    name_list_add(&KERNEL_NAMES, TC_FP8, NTC_FP8);
    parse_args(argc, argv, &SPEC, &o);
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i].ndims == 2)
            cli_fail(&SPEC, "size '%lldx%lld': give N or MxNxK", o.sizes[i].dim[0],
                     o.sizes[i].dim[1]);
    if (sweep.only && !sweep.fp32 && !sweep.tc)
        cli_fail(&SPEC, "--sweep-only needs --sweep, --sweep-tc or --sweep-tc-all");
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    double largest = shape_bytes(o.bench ? (Shape){8192, 8192, 8192} : (Shape){4096, 4096, 4096});
    if (o.nsizes) largest = 0.0;
    for (int i = 0; i < o.nsizes; i++) {
        double b = shape_bytes(shape_of(&o.sizes[i]));
        largest = b > largest ? b : largest;
    }
    if (sweep.only) largest = 0.0;
    if (sweep.fp32) {
        double b = sweep_largest_bytes(o.seed);
        largest = b > largest ? b : largest;
    }
    if (sweep.tc) {
        double b = tc_sweep_largest_bytes(o.seed);
        largest = b > largest ? b : largest;
    }
    require_device_memory(&SPEC, &info, largest, "A, B and C");

    int failures = 0;
    if (o.check) failures += run_checks(&o);
    if (o.bench) run_bench(&o, &info);
    return failures ? 1 : 0;
}
