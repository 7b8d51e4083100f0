/* Chapter 06: --bench, the pipeline ladder. Each copy and the kernel timed alone (their
 * maximum is the bound an overlapped pipeline can reach), the work per element balanced
 * against the larger copy, every pipeline against that bound; then the timeline. */
#ifndef CH06_BENCH_PIPELINES_CUH
#define CH06_BENCH_PIPELINES_CUH

#include "common/report.h"
#include "flags.cuh"
#include "pipelines.cuh"
#include "timeline.cuh"

typedef struct {
    Workspace *w;
    int work;
} Stage;

static void run_h2d_whole(void *ctx)
{
    Workspace *w = ((Stage *)ctx)->w;
    CUDA_CHECK(cudaMemcpyAsync(w->d_in, w->pin_in, (size_t)w->n * sizeof(float),
                               cudaMemcpyHostToDevice, 0));
}

static void run_d2h_whole(void *ctx)
{
    Workspace *w = ((Stage *)ctx)->w;
    CUDA_CHECK(cudaMemcpyAsync(w->pin_out, w->d_out, (size_t)w->n * sizeof(float),
                               cudaMemcpyDeviceToHost, 0));
}

/* Both copies at once, on two streams: what the link carries when both directions are
 * busy, as they are in every overlapped pipeline. */
static void run_duplex(void *ctx)
{
    Workspace *w = ((Stage *)ctx)->w;
    size_t bytes = (size_t)w->n * sizeof(float);
    CUDA_CHECK(cudaMemcpyAsync(w->d_in, w->pin_in, bytes, cudaMemcpyHostToDevice, w->streams[0]));
    CUDA_CHECK(cudaMemcpyAsync(w->pin_out, w->d_out, bytes, cudaMemcpyDeviceToHost, w->streams[1]));
}

static void run_kernel_whole(void *ctx)
{
    Stage *s = (Stage *)ctx;
    launch_work(s->w->d_in, s->w->d_out, s->w->n, s->work, 0);
}

/* The work per element that makes the kernel take target_ms: the time is linear in the
 * work once the multiply-adds outweigh the memory traffic, so scale from a probe twice. */
static int balance_work(Workspace *w, double target_ms, int reps)
{
    Stage s = {w, 1024};
    for (int round = 0; round < 2; round++) {
        float ms = time_median_ms(run_kernel_whole, &s, 2, reps < 5 ? reps : 5);
        double work = s.work * target_ms / ms;
        s.work = work < 1 ? 1 : (work > 1000000 ? 1000000 : (int)(work + 0.5));
    }
    return s.work;
}

/* The chapter's own overlapped pipelines: the best of them is printed after the table (an
 * exercise's answer is timed, but not counted). */
static int is_overlapped(const PipelineVersion *v)
{
    return v->launch != pipeline_serial && v->extra.nstreams > 1 && strcmp(v->role, "exercise");
}

/* The ladder at size n; with_timeline: also write the timeline at this size and balance. */
static void bench_pipelines(const Options *o, const DeviceInfo *info, long long n,
                            int with_timeline)
{
    Workspace w;
    workspace_create(&w, n, o->seed);
    Stage s = {&w, 0};
    float h2d_ms = time_median_ms(run_h2d_whole, &s, 2, o->reps);
    float d2h_ms = time_median_ms(run_d2h_whole, &s, 2, o->reps);
    float duplex_ms = time_median_ms(run_duplex, &s, 2, o->reps);
    double copy_ms = h2d_ms > d2h_ms ? h2d_ms : d2h_ms;
    s.work = FLAGS.work ? FLAGS.work : balance_work(&w, copy_ms, o->reps);
    float kernel_ms = time_median_ms(run_kernel_whole, &s, 2, o->reps);
    double bound = copy_ms > kernel_ms ? copy_ms : kernel_ms;
    printf(
        "\nworkload: %lld floats (%.0f MiB each way), %d multiply-adds per element%s, %d chunks\n",
        n, n * 4.0 / (1 << 20), s.work, FLAGS.work ? "" : " (balanced: kernel ~ larger copy)",
        FLAGS.chunks);

    char size[32];
    snprintf(size, sizeof size, "%lld", n);
    table_header(
        "pipelines: ms for copy in + kernel + copy out; ceiling = bound max(H2D, kernel, D2H)");
    BenchRow stages[5] = {
        {"h2d_alone", "ceiling", size, h2d_ms, h2d_ms, "ms", "bound", bound},
        {"kernel_alone", "ceiling", size, kernel_ms, kernel_ms, "ms", "bound", bound},
        {"d2h_alone", "ceiling", size, d2h_ms, d2h_ms, "ms", "bound", bound},
        {"h2d_d2h_together", "ceiling", size, duplex_ms, duplex_ms, "ms", "bound", bound},
        {"bound", "ceiling", size, bound, bound, "ms", "bound", bound},
    };
    for (int i = 0; i < 5; i++) report_row(o->csv, info->name, CHAPTER, &stages[i], 0.0);

    Run r;
    run_create(&r, &w, FLAGS.chunks, s.work);
    double base_ms = 0.0, best_ms = 0.0;
    const char *best = NULL;
    for (int v = 0; v < NVERSIONS; v++) {
        if (!kernel_selected(o, VERSIONS[v].name)) continue;
        r.v = &VERSIONS[v];
        float ms = time_median_ms(run_pipeline, &r, 2, o->reps);
        if (v == 0) base_ms = ms;
        BenchRow row = {VERSIONS[v].name, VERSIONS[v].role, size, ms, ms, "ms", "bound", bound};
        report_row(o->csv, info->name, CHAPTER, &row, base_ms);
        if (is_overlapped(&VERSIONS[v]) && (best == NULL || ms < best_ms)) {
            best = VERSIONS[v].name;
            best_ms = ms;
        }
    }
    if (best)
        printf("best overlapped: %s, %.3f ms = %.1f%% above the bound%s\n", best, best_ms,
               100.0 * (best_ms / bound - 1.0), base_ms > 0 ? "" : " (naive not run)");
    if (best && base_ms > 0) printf("speedup over naive_pageable: %.2fx\n", base_ms / best_ms);
    printf("both copies at once take %.3f ms, %.1f%% longer than the slower one alone\n", duplex_ms,
           100.0 * (duplex_ms / copy_ms - 1.0));
    run_destroy(&r);
    workspace_destroy(&w);
    if (with_timeline) write_timeline(info, n, s.work);
}

#endif
