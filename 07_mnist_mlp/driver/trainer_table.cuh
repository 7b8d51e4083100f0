/* Chapter 07: the table of trainers. Each row is one trainer (--impl NAME): its family of
 * steps and the choices within it (see Impl in driver/trainer.cuh). The check, the bench and
 * --train walk this table, and find the rows they compare by name, never by position.
 *
 * A new trainer: a row here. A new family of steps: a file that defines its StepFamily
 * (part1_fused/01_unfused_steps.cuh is the model), one #include below, and its rows. */
#ifndef CH07_TRAINERS_CUH
#define CH07_TRAINERS_CUH

#include "07_mnist_mlp/part1_fused/05_fed_steps.cuh"
#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"
#include "07_mnist_mlp/part4_persistent/11_persistent_steps.cuh"
#include "07_mnist_mlp/part2_tensor_cores/01_tc_steps.cuh"
#include "07_mnist_mlp/part1_fused/08_three_launch_steps.cuh"
#include "07_mnist_mlp/part1_fused/01_unfused_steps.cuh"
#include "07_mnist_mlp/solutions/solutions.cuh"

/* name, role, family of steps,
 *     {gemm, feed, sync_each, graph, vs, precision} */
// clang-format off
static const Impl IMPLS[] = {
    {"naive",             "naive",     &UNFUSED_STEPS,
        {GEMM_NAIVE,        FEED_COPY,          1, GRAPH_NONE,  NULL,          "fp32"}},
    {"resident",          "step",      &UNFUSED_STEPS,
        {GEMM_NAIVE,        FEED_RESIDENT,      0, GRAPH_NONE,  NULL,          "fp32"}},
    {"best_kernels",      "step",      &UNFUSED_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_NONE,  NULL,          "fp32"}},
    {"fused",             "step",      &FUSED_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_NONE,  NULL,          "fp32"}},
    {"fed",               "step",      &FED_STEPS,
        {GEMM_BEST,         FEED_DOUBLE_BUFFER, 0, GRAPH_NONE,  NULL,          "fp32"}},
    {"step_graph",        "step",      &FUSED_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_STEP,  NULL,          "fp32"}},
    {"epoch_graph",       "step",      &FUSED_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_EPOCH, "cublas",      "fp32"}},
    {"optimized",         "optimized", &THREE_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_EPOCH, "epoch_graph", "fp32"}},
    {"cublas",            "ceiling",   &FUSED_STEPS,
        {GEMM_CUBLAS,       FEED_RESIDENT,      0, GRAPH_EPOCH, NULL,          "fp32"}},
    {"tf32",              "optimized", &TF32_STEPS,
        {GEMM_TENSOR_CORES, FEED_RESIDENT,      0, GRAPH_EPOCH, "optimized",   "tf32"}},
    {"bf16",              "optimized", &THREE_BF16_STEPS,
        {GEMM_TENSOR_CORES, FEED_RESIDENT,      0, GRAPH_EPOCH, "optimized",   "bf16"}},
    {"persistent",        "optimized", &PERSISTENT_STEPS,
        {GEMM_OWN,          FEED_RESIDENT,      0, GRAPH_NONE,  "optimized",   "fp32"}},
    {"persistent_bf16x3", "optimized", &PERSISTENT_BF16X3_STEPS,
        {GEMM_OWN,          FEED_RESIDENT,      0, GRAPH_NONE,  "persistent",  "fp32"}},
    {"persistent_bf16",   "optimized", &PERSISTENT_BF16_STEPS,
        {GEMM_OWN,          FEED_RESIDENT,      0, GRAPH_NONE,  "persistent",  "bf16"}},
    /* the exercises' answers (solutions/) */
    {"ex1_gather_apart",  "exercise",  &EX1_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_EPOCH, "epoch_graph", "fp32"}},
    {"ex2_tf32_truncated", "exercise", &EX2_STEPS,
        {GEMM_TENSOR_CORES, FEED_RESIDENT,      0, GRAPH_EPOCH, "tf32",        "tf32"}},
    {"ex3_last_block",    "exercise",  &EX3_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_EPOCH, "epoch_graph", "fp32"}},
    {"ex4_graph_params",  "exercise",  &EX4_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_NONE,  "step_graph",  "fp32"}},
    {"ex5_out_backward",  "exercise",  &EX5_STEPS,
        {GEMM_BEST,         FEED_RESIDENT,      0, GRAPH_EPOCH, "epoch_graph", "fp32"}},
};
// clang-format on
#define NIMPLS VERSION_COUNT(IMPLS)

/* The --kernel and --impl names: IMPLS's, filled in by list_impl_names before the command
 * line is read. */
static NameList IMPL_NAMES;

static void list_impl_names(void) { name_list_add(&IMPL_NAMES, IMPLS, NIMPLS); }

/* The row named `name`, or -1. */
static int impl_index(const char *name) { return version_index(IMPLS, NIMPLS, name); }

static const Impl *find_impl(const char *name)
{
    int i = impl_index(name);
    return i < 0 ? NULL : &IMPLS[i];
}

#endif
