/* Chapter 03 driver: the sum of n floats. --check validates every version against a
 * double-precision CPU sum on random and on integer inputs; --bench times them against
 * CUB's DeviceReduce::Sum on the same data (kernels in kernels.cuh, the check and the
 * timing loop in harness.cuh, the reference and tolerance in reference.h). */
#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "harness.cuh"
#include "kernels.cuh"
#include "solutions/solutions.cuh"

#define CHAPTER "03_reduction"

static const ReduceVersion VERSIONS[] = {
    {"v1_divergent", "naive", reduce_launch_v1},
    {"v2_strided", "step", reduce_launch_v2},
    {"v3_sequential", "step", reduce_launch_v3},
    {"v4_first_add", "step", reduce_launch_v4},
    {"v5_warp_shuffle", "step", reduce_launch_v5},
    {"v6_grid_stride", "step", reduce_launch_v6},
    {"v7_single_pass", "optimized", reduce_launch_v7},
    /* the exercises' answers (solutions/) */
    {"ex1_block_128", "exercise", ex1_launch_block<128>},
    {"ex1_block_512", "exercise", ex1_launch_block<512>},
    {"ex2_one_float4", "exercise", ex2_launch_one_float4},
    {"ex2_int_index", "exercise", ex2_launch_int_index},
    {"ex3_cg_reduce", "exercise", ex3_launch_cg_reduce},
    {"ex4_atomic", "exercise", ex4_launch_atomic},
    {"ex5_grid_sync", "exercise", ex5_launch_grid_sync},
    {"ex6_kahan", "exercise", ex6_launch_kahan},
};
#define NVERSIONS VERSION_COUNT(VERSIONS)
static NameList KERNEL_NAMES; /* VERSIONS' names, for --kernel and --help */

/* 1 and 2 (less than one float4), block boundaries +-1, a prime near 10^6, the bench sizes.
 * All but the powers of two leave a tail of n % 4 elements for the float4 versions. */
static const long long CHECK_SIZES[] = {1, 2, 3, 1023, 1025, 999983, 1LL << 24, 1LL << 28};
static const long long BENCH_SIZES[] = {1LL << 28, 1LL << 24};

static const ProgramSpec SPEC = {
    "reduction",
    "Chapter 03: the sum of n floats, seven versions from a divergent tree to a single pass, "
    "against CUB.",
    "number of floats, up to 2147483647 (check default: 1,2,3,1023,1025,999983,2^24,2^28;\n"
    "                   bench default: 2^28,2^24)",
    NULL,
    KERNEL_NAMES.name,
    1,
    2147483647LL,
    NULL,
    NULL};

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, VERSIONS, NVERSIONS);
    parse_args(argc, argv, &SPEC, &o);
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    int nbench = size_count(&o, (int)(sizeof BENCH_SIZES / sizeof BENCH_SIZES[0]));
    require_device_memory(&SPEC, &info, reduce_bench_bytes(largest_size(&o, BENCH_SIZES[0]), &info),
                          "the input and its rotated copies");

    int failures = 0;
    if (o.check) {
        failures += reduce_check_sizes(VERSIONS, NVERSIONS, &o, CHECK_SIZES,
                                       (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]), "");
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench)
        for (int s = 0; s < nbench; s++)
            reduce_bench_size(VERSIONS, NVERSIONS, &o, &info, CHAPTER,
                              (int)size_at(&o, BENCH_SIZES, s));
    reduce_cub_free();
    return failures ? 1 : 0;
}
