/* Chapter 06: unified memory. The host writes managed input and a light kernel reads it:
 * on first touch (page faults), with hints (cudaMemAdvise), prefetched
 * (cudaMemPrefetchAsync), against an explicit pinned copy; --check and --bench. */
#ifndef CH06_UNIFIED_MEMORY_CUH
#define CH06_UNIFIED_MEMORY_CUH

#include "common/report.h"
#include "flags.cuh"
#include "pipelines.cuh"

typedef Version<UmMode> UmVersion; /* the launch is the mode um_run runs */

static const UmVersion UM_VERSIONS[] = {
    {"um_fault", "naive", UM_FAULT},
    {"um_advise", "step", UM_ADVISE},
    {"um_prefetch", "optimized", UM_PREFETCH},
    {"pinned_copy", "ceiling", UM_PINNED_COPY},
};
#define NUM_VERSIONS VERSION_COUNT(UM_VERSIONS)

/* --- check ---------------------------------------------------------------------------------- */

static int um_supported(void)
{
    return current_device_attribute(cudaDevAttrConcurrentManagedAccess);
}

/* Managed input of n floats, with um_advise's hints if asked; the host writes it later. */
static float *um_alloc(UmMode mode, long long n)
{
    if (mode == UM_PINNED_COPY) return NULL;
    int dev;
    float *m;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaMallocManaged(&m, (size_t)n * sizeof(float)));
    if (mode == UM_ADVISE) sp_um_advise(m, (size_t)n * sizeof(float), dev);
    return m;
}

/* Every selected unified-memory variant (work = 1) at size n. Returns the failures. */
static int check_um(const Options *o, Workspace *w)
{
    size_t bytes = (size_t)w->n * sizeof(float);
    char size[32];
    snprintf(size, sizeof size, "%lld", w->n);
    double *ref = (double *)xmalloc((size_t)w->n * sizeof(double));
    sp_reference(w->page_in, ref, (size_t)w->n, 1);
    int dev, failures = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    for (int v = 0; v < NUM_VERSIONS; v++) {
        if (!kernel_selected(o, UM_VERSIONS[v].name)) continue;
        float *m = um_alloc(UM_VERSIONS[v].launch, w->n);
        if (m) memcpy(m, w->page_in, bytes); /* the host writes the managed input */
        poison_device(w->d_out, bytes);
        memset(w->page_out, 0xFF, bytes);
        sp_um_run(UM_VERSIONS[v].launch, m, w->pin_in, w->d_in, w->d_out, w->n, dev, 0);
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(w->page_out, w->d_out, bytes, cudaMemcpyDeviceToHost));
        if (m) CUDA_CHECK(cudaFree(m));
        double err = max_rel_error(w->page_out, ref, (size_t)w->n, 1e-30, NULL);
        failures += !report_check(UM_VERSIONS[v].name, size, err, SP_TOL);
    }
    free(ref);
    return failures;
}

static int any_um_selected(const Options *o)
{
    for (int v = 0; v < NUM_VERSIONS; v++)
        if (kernel_selected(o, UM_VERSIONS[v].name)) return 1;
    return 0;
}

/* --- bench: unified memory ------------------------------------------------------------------ */

/* Median time of one variant. Before every repetition the host rewrites the managed input
 * (untimed), which moves its pages back to the CPU, so each timed run starts from data
 * the host has just written: the situation of a first GPU touch. */
static float time_um(UmMode mode, const Workspace *w, float *managed, int reps)
{
    size_t bytes = (size_t)w->n * sizeof(float);
    float *ms = (float *)xmalloc(sizeof(float) * (size_t)reps);
    cudaEvent_t start, stop;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = -1; i < reps; i++) { /* i = -1: warm-up */
        if (managed) memcpy(managed, w->page_in, bytes);
        CUDA_CHECK(cudaEventRecord(start, 0));
        sp_um_run(mode, managed, w->pin_in, w->d_in, w->d_out, w->n, dev, 0);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        if (i >= 0) CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
    }
    qsort(ms, (size_t)reps, sizeof(float), compare_floats);
    float median = ms[reps / 2];
    free(ms);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return median;
}

static void bench_um(const Options *o, const DeviceInfo *info, long long n)
{
    if (!um_supported()) {
        printf("\nunified memory skipped: this GPU has no concurrent managed access\n");
        return;
    }
    size_t free_b, total_b;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if ((double)n * sizeof(float) >
        0.25 * (double)free_b) { /* managed input + d_in + d_out, with room */
        n = (long long)(0.25 * (double)free_b / sizeof(float));
        printf("\nunified memory: size cut to %lld floats to stay within free GPU memory\n", n);
    }
    Workspace w;
    workspace_create(&w, n, o->seed);
    int reps = o->reps < 10 ? o->reps : 10;
    float ms[NUM_VERSIONS];
    for (int v = 0; v < NUM_VERSIONS; v++) {
        ms[v] = 0.0f;
        if (!kernel_selected(o, UM_VERSIONS[v].name) && UM_VERSIONS[v].launch != UM_PINNED_COPY)
            continue;
        float *m = um_alloc(UM_VERSIONS[v].launch, n);
        ms[v] = time_um(UM_VERSIONS[v].launch, &w, m, reps);
        if (m) CUDA_CHECK(cudaFree(m));
    }
    char size[32];
    snprintf(size, sizeof size, "%lld", n);
    double pinned_ms = ms[NUM_VERSIONS - 1];
    table_header(
        "unified memory: ms to get the host-written input to the GPU and run a light kernel\n"
        "(1 multiply-add per element); ceiling = explicit pinned copy + the same kernel");
    for (int v = 0; v < NUM_VERSIONS; v++) {
        if (!kernel_selected(o, UM_VERSIONS[v].name)) continue;
        BenchRow r = {UM_VERSIONS[v].name,
                      UM_VERSIONS[v].role,
                      size,
                      ms[v],
                      ms[v],
                      "ms",
                      "pinned_copy",
                      pinned_ms};
        report_row(o->csv, info->name, CHAPTER, &r, ms[0]);
    }
    if (ms[0] > 0 && ms[2] > 0)
        printf("um_prefetch is %.2fx faster than um_fault\n", ms[0] / ms[2]);
    workspace_destroy(&w);
}

#endif
