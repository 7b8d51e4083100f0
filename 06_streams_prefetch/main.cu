/* Chapter 06 driver: streams and prefetch. --check runs every pipeline and every unified
 * memory variant on fresh random input and compares each output element with the CPU;
 * --bench measures pageable / registered / pinned copy bandwidth against the PCIe link,
 * the pipeline ladder against the bound max(H2D, kernel, D2H), unified memory against an
 * explicit pinned copy, and with --timeline FILE writes the start and end of every copy and
 * kernel of four pipelines for the timeline figure.
 *
 * The chapter's files:
 *   kernels.cuh          the kernel and every pipeline (double_buffer.cuh: the double buffer)
 *   pipelines.cuh        the pipelines as versions: their table, buffers, a run, --check
 *   unified_memory.cuh   the unified memory variants: --check and --bench
 *   bandwidth.cuh        --bench: copy bandwidth against the PCIe link
 *   bench_pipelines.cuh  --bench: the pipeline ladder against max(H2D, kernel, D2H)
 *   timeline.cuh         --bench --timeline: when each copy and kernel ran
 *   flags.cuh            the chapter's command line
 *   reference.h          the CPU reference
 *   solutions/           the lesson's exercises' answers, pipelines with rows in pipelines.cuh
 *   figures/             the lesson's explanatory figures (make_figures.py draws them)
 *   main.cu              what runs when */
#include "bandwidth.cuh"
#include "bench_pipelines.cuh"
#include "flags.cuh"
#include "pipelines.cuh"
#include "unified_memory.cuh"

#define CHECK_WORK 16 /* multiply-adds per element in --check */
static const long long CHECK_SIZES[] = {1, 3, 1021, 4097, 1000003, 1LL << 28};
static const long long BENCH_SIZE = 1LL << 28; /* 1 GiB each way */
static const long long UM_SIZE = 1LL << 25;    /* 128 MiB of managed input */

/* Chunk counts 7 (divides none of the default sizes; K = 8, 16 exceed it) and --chunks. */
static int check_size(const Options *o, long long n)
{
    int work = FLAGS.work ? FLAGS.work : CHECK_WORK;
    Workspace w;
    workspace_create(&w, n, o->seed + (unsigned long long)n);
    double *ref = (double *)xmalloc((size_t)n * sizeof(double));
    sp_reference(w.page_in, ref, (size_t)n, work);
    int failures = check_pipelines(o, &w, ref, 7, work);
    if (FLAGS.chunks != 7) failures += check_pipelines(o, &w, ref, FLAGS.chunks, work);
    if (any_um_selected(o)) {
        if (um_supported())
            failures += check_um(o, &w);
        else
            printf("  skip unified memory: this GPU has no concurrent managed access\n");
    }
    free(ref);
    workspace_destroy(&w);
    return failures;
}

int main(int argc, char **argv)
{
    Options o;
    name_list_add(&KERNEL_NAMES, VERSIONS, NVERSIONS);
    name_list_add(&KERNEL_NAMES, UM_VERSIONS, NUM_VERSIONS);
    name_list_append(&KERNEL_NAMES, "bandwidth");
    parse_args(argc, argv, &SPEC, &o);
    if (FLAGS.timeline && !o.bench) cli_fail(&SPEC, "--timeline needs --bench");
    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);

    long long largest = largest_size(&o, BENCH_SIZE);
    /* pipelines: input, output and two double-buffer slots each way (largest with 7 chunks);
     * unified memory: managed input, device input and output */
    int fewest_chunks = FLAGS.chunks < 7 ? FLAGS.chunks : 7;
    double pipeline = 2.0 * largest + 4.0 * sp_chunk_len(largest, fewest_chunks);
    require_device_memory(&SPEC, &info,
                          sizeof(float) * (pipeline > 3.0 * largest ? pipeline : 3.0 * largest),
                          "the arrays");

    int failures = 0;
    if (o.check) {
        printf("\ncheck (seed %llu): max relative error against a double-precision CPU reference\n",
               o.seed);
        int count = size_count(&o, (int)(sizeof CHECK_SIZES / sizeof CHECK_SIZES[0]));
        for (int s = 0; s < count; s++) failures += check_size(&o, size_at(&o, CHECK_SIZES, s));
        printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    }
    if (o.bench) {
        if (kernel_selected(&o, "bandwidth")) bench_bandwidth(&o, &info);
        for (int s = 0; s < size_count(&o, 1); s++) {
            long long n = size_at(&o, &BENCH_SIZE, s);
            if (any_pipeline_selected(&o)) bench_pipelines(&o, &info, n, s == 0 && FLAGS.timeline);
            if (any_um_selected(&o)) bench_um(&o, &info, o.nsizes ? n : UM_SIZE);
        }
    }
    return failures ? 1 : 0;
}
