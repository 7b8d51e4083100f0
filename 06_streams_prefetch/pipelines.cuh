/* Chapter 06: the pipelines of kernels.cuh as versions the driver runs: the table of
 * versions (the exercises' answers of solutions/ last), the buffers they share (pageable
 * and pinned host arrays, device arrays, streams), one run of a version, and their --check
 * against the CPU. */
#ifndef CH06_PIPELINES_CUH
#define CH06_PIPELINES_CUH

#include <string.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/validate.h"
#include "kernels.cuh"
#include "solutions/solutions.cuh"

/* What a pipeline needs beside its function: how many streams, and pinned host buffers or
 * pageable (0). */
typedef struct {
    int nstreams;
    int pinned;
} PipelineShape;

typedef Version<PipelineFn, PipelineShape> PipelineVersion;

static const PipelineVersion VERSIONS[] = {
    {"naive_pageable", "naive", pipeline_serial, {1, 0}},
    {"pinned_serial", "step", pipeline_serial, {1, 1}},
    {"depth_k1", "step", pipeline_depth_first, {1, 1}},
    {"depth_k2", "step", pipeline_depth_first, {2, 1}},
    {"depth_k4", "step", pipeline_depth_first, {4, 1}},
    {"depth_k8", "step", pipeline_depth_first, {8, 1}},
    {"depth_k16", "step", pipeline_depth_first, {16, 1}},
    {"breadth_k1", "step", pipeline_breadth_first, {1, 1}},
    {"breadth_k2", "step", pipeline_breadth_first, {2, 1}},
    {"breadth_k4", "step", pipeline_breadth_first, {4, 1}},
    {"breadth_k8", "step", pipeline_breadth_first, {8, 1}},
    {"breadth_k16", "step", pipeline_breadth_first, {16, 1}},
    {"double_buffer", "optimized", pipeline_double_buffer, {3, 1}},
    {"ex1_depth_k3", "exercise", ex1_depth_k3, {3, 1}},
    {"ex2_depth_k8_pageable", "exercise", ex2_depth_k8_pageable, {8, 0}},
    {"ex3_stage_streams", "exercise", ex3_stage_streams, {3, 1}},
    {"ex4_registered", "exercise", ex4_registered, {8, 0}},
    {"ex5_graph_k8", "exercise", ex5_graph_k8, {8, 1}},
    {"ex6_ordered_k4", "exercise", ex6_ordered_k4, {4, 1}},
};
#define NVERSIONS VERSION_COUNT(VERSIONS)

/* --- buffers shared by the pipelines ------------------------------------------------------ */

typedef struct {
    long long n;
    float *page_in, *page_out; /* malloc: what naive_pageable copies from and to */
    float *pin_in, *pin_out;   /* cudaMallocHost: every other pipeline */
    float *d_in, *d_out;
    cudaStream_t streams[SP_MAX_STREAMS];
} Workspace;

static void workspace_create(Workspace *w, long long n, unsigned long long seed)
{
    size_t bytes = (size_t)n * sizeof(float);
    w->n = n;
    w->page_in = (float *)xmalloc(bytes);
    w->page_out = (float *)xmalloc(bytes);
    CUDA_CHECK(cudaMallocHost(&w->pin_in, bytes));
    CUDA_CHECK(cudaMallocHost(&w->pin_out, bytes));
    CUDA_CHECK(cudaMalloc(&w->d_in, bytes));
    CUDA_CHECK(cudaMalloc(&w->d_out, bytes));
    for (int s = 0; s < SP_MAX_STREAMS; s++) CUDA_CHECK(cudaStreamCreate(&w->streams[s]));
    fill_uniform(w->page_in, (size_t)n, -1.0f, 1.0f, seed);
    memcpy(w->pin_in, w->page_in, bytes);
}

static void workspace_destroy(Workspace *w)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int s = 0; s < SP_MAX_STREAMS; s++) CUDA_CHECK(cudaStreamDestroy(w->streams[s]));
    free(w->page_in);
    free(w->page_out);
    CUDA_CHECK(cudaFreeHost(w->pin_in));
    CUDA_CHECK(cudaFreeHost(w->pin_out));
    CUDA_CHECK(cudaFree(w->d_in));
    CUDA_CHECK(cudaFree(w->d_out));
}

/* Everything one run of a pipeline needs: the version, the workspace, the double buffers. */
typedef struct {
    const PipelineVersion *v;
    Workspace *w;
    int chunks, work;
    DoubleBuffer db_in, db_out;
    Timeline *timeline;
} Run;

static void run_create(Run *r, Workspace *w, int chunks, int work)
{
    size_t slot = (size_t)sp_chunk_len(w->n, chunks) * sizeof(float);
    r->w = w;
    r->chunks = chunks;
    r->work = work;
    r->v = NULL;
    r->timeline = NULL;
    double_buffer_create(&r->db_in, slot);
    double_buffer_create(&r->db_out, slot);
}

static void run_destroy(Run *r)
{
    double_buffer_destroy(&r->db_in);
    double_buffer_destroy(&r->db_out);
}

static float *run_output(const Run *r)
{
    return r->v->extra.pinned ? r->w->pin_out : r->w->page_out;
}

static void run_pipeline(void *ctx)
{
    Run *r = (Run *)ctx;
    Pipeline p = {r->w->n,
                  r->work,
                  r->chunks,
                  r->v->extra.nstreams,
                  r->v->extra.pinned ? r->w->pin_in : r->w->page_in,
                  run_output(r),
                  r->w->d_in,
                  r->w->d_out,
                  r->w->streams,
                  &r->db_in,
                  &r->db_out,
                  r->timeline};
    r->v->launch(&p);
}

/* --- check ---------------------------------------------------------------------------------- */

/* Every selected pipeline at size n with `chunks` pieces, output poisoned on the host and
 * on the device before each run. Returns the failures. */
static int check_pipelines(const Options *o, Workspace *w, const double *ref, int chunks, int work)
{
    size_t bytes = (size_t)w->n * sizeof(float);
    char size[32], what[64];
    snprintf(size, sizeof size, "%lld", w->n);
    Run r;
    run_create(&r, w, chunks, work);
    int failures = 0;
    for (int v = 0; v < NVERSIONS; v++) {
        if (!kernel_selected(o, VERSIONS[v].name)) continue;
        r.v = &VERSIONS[v];
        poison_device(w->d_out, bytes);
        for (int s = 0; s < 2; s++) poison_device(r.db_out.slot[s], r.db_out.slot_bytes);
        memset(run_output(&r), 0xFF, bytes);
        run_pipeline(&r);
        CUDA_CHECK(cudaDeviceSynchronize());
        double err = max_rel_error(run_output(&r), ref, (size_t)w->n, 1e-30, NULL);
        snprintf(what, sizeof what, "%s, %d chunk%s", VERSIONS[v].name,
                 sp_chunk_count(w->n, chunks), sp_chunk_count(w->n, chunks) > 1 ? "s" : "");
        failures += !report_check(what, size, err, SP_TOL);
    }
    run_destroy(&r);
    return failures;
}

static int any_pipeline_selected(const Options *o)
{
    for (int v = 0; v < NVERSIONS; v++)
        if (kernel_selected(o, VERSIONS[v].name)) return 1;
    return 0;
}

#endif
