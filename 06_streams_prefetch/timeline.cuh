/* Chapter 06: --bench --timeline FILE. Four pipelines run once with events around every
 * copy and kernel; the start and end of each go to FILE for plot_extra.py's figure. */
#ifndef CH06_TIMELINE_CUH
#define CH06_TIMELINE_CUH

#include "flags.cuh"
#include "pipelines.cuh"

#define TIMELINE_CHUNKS 16 /* few enough chunks to read on the figure */

static const char *const TIMELINE_VERSIONS[] = {"pinned_serial", "depth_k2", "depth_k4",
                                                "double_buffer"};

static const PipelineVersion *find_version(const char *name)
{
    int v = version_index(VERSIONS, NVERSIONS, name);
    return v < 0 ? NULL : &VERSIONS[v];
}

/* Runs each timeline pipeline once with events around every op and writes one line per op:
 * pipeline, stream, op, chunk, start and end in ms since the pipeline began. An event
 * before an op fires when its stream reaches the op; the op itself may wait a little longer
 * for its copy engine when another stream holds it. */
static void write_timeline(const DeviceInfo *info, long long n, int work)
{
    FILE *f = fopen(FLAGS.timeline, "w");
    if (!f) {
        fprintf(stderr, "cannot write timeline file '%s'\n", FLAGS.timeline);
        exit(1);
    }
    fprintf(f, "# gpu\t%s\tfloats\t%lld\twork\t%d\tchunks\t%d\n", info->name, n, work,
            TIMELINE_CHUNKS);
    timeline_write_header(f);
    Workspace w;
    workspace_create(&w, n, 1);
    Run r;
    run_create(&r, &w, TIMELINE_CHUNKS, work);
    Timeline *tl = (Timeline *)xmalloc(sizeof(Timeline));
    cudaEvent_t origin;
    CUDA_CHECK(cudaEventCreate(&origin));
    for (size_t t = 0; t < sizeof TIMELINE_VERSIONS / sizeof TIMELINE_VERSIONS[0]; t++) {
        r.v = find_version(TIMELINE_VERSIONS[t]);
        r.timeline = NULL;
        run_pipeline(&r); /* warm-up */
        tl->count = 0;
        r.timeline = tl;
        CUDA_CHECK(cudaEventRecord(origin, 0));
        run_pipeline(&r);
        CUDA_CHECK(cudaDeviceSynchronize());
        timeline_write(f, r.v->name, tl, origin);
    }
    CUDA_CHECK(cudaEventDestroy(origin));
    free(tl);
    run_destroy(&r);
    workspace_destroy(&w);
    if (fclose(f) != 0) {
        fprintf(stderr, "error writing timeline file '%s'\n", FLAGS.timeline);
        exit(1);
    }
    printf("timeline of %d chunks written to %s\n", TIMELINE_CHUNKS, FLAGS.timeline);
}

#endif
