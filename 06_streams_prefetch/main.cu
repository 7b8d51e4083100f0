/* Chapter 06 driver: streams and prefetch. --check runs every pipeline and every unified
 * memory variant on fresh random input and compares each output element with the CPU;
 * --bench measures pageable / registered / pinned copy bandwidth against the PCIe link,
 * the pipeline ladder against the bound max(H2D, kernel, D2H), unified memory against an
 * explicit pinned copy, and with --timeline FILE writes the start and end of every copy and
 * kernel of four pipelines for the timeline figure. */
#include <string.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"
#include "kernels.cuh"

#define CHAPTER "06_streams_prefetch"

#define CHECK_WORK 16                     /* multiply-adds per element in --check */
#define TIMELINE_CHUNKS 16                /* few enough chunks to read on the figure */
static const long long CHECK_SIZES[] = {1, 3, 1021, 4097, 1000003, 1LL << 28};
static const long long BENCH_SIZE = 1LL << 28;  /* 1 GiB each way */
static const long long UM_SIZE = 1LL << 25;     /* 128 MiB of managed input */
static const size_t SWEEP_MAX = 1ULL << 30;     /* bandwidth sweep: 4 KiB ... 1 GiB */

typedef struct {
    int work;              /* --work: multiply-adds per element; 0: 16 in --check, balanced in --bench */
    int chunks;            /* --chunks: pieces of the array in the chunked pipelines */
    const char *timeline;  /* --timeline FILE: where the timeline goes (bench only) */
} ChapterFlags;

static ChapterFlags FLAGS = {0, 64, NULL};

typedef struct {
    const char *name;
    const char *role;
    PipelineFn run;
    int nstreams;
    int pinned;            /* 0: pageable host buffers */
} Version;

static const Version VERSIONS[] = {
    {"naive_pageable", "naive", pipeline_serial, 1, 0},
    {"pinned_serial", "step", pipeline_serial, 1, 1},
    {"depth_k1", "step", pipeline_depth_first, 1, 1},
    {"depth_k2", "step", pipeline_depth_first, 2, 1},
    {"depth_k4", "step", pipeline_depth_first, 4, 1},
    {"depth_k8", "step", pipeline_depth_first, 8, 1},
    {"depth_k16", "step", pipeline_depth_first, 16, 1},
    {"breadth_k1", "step", pipeline_breadth_first, 1, 1},
    {"breadth_k2", "step", pipeline_breadth_first, 2, 1},
    {"breadth_k4", "step", pipeline_breadth_first, 4, 1},
    {"breadth_k8", "step", pipeline_breadth_first, 8, 1},
    {"breadth_k16", "step", pipeline_breadth_first, 16, 1},
    {"double_buffer", "optimized", pipeline_double_buffer, 3, 1},
};
#define NVERSIONS (int)(sizeof VERSIONS / sizeof VERSIONS[0])

typedef struct {
    const char *name;
    const char *role;
    UmMode mode;
} UmVersion;

static const UmVersion UM_VERSIONS[] = {
    {"um_fault", "naive", UM_FAULT},
    {"um_advise", "step", UM_ADVISE},
    {"um_prefetch", "optimized", UM_PREFETCH},
    {"pinned_copy", "ceiling", UM_PINNED_COPY},
};
#define NUM_VERSIONS (int)(sizeof UM_VERSIONS / sizeof UM_VERSIONS[0])

static const char *const KERNEL_NAMES[] = {
    "naive_pageable", "pinned_serial", "depth_k1", "depth_k2", "depth_k4", "depth_k8",
    "depth_k16", "breadth_k1", "breadth_k2", "breadth_k4", "breadth_k8", "breadth_k16",
    "double_buffer", "um_fault", "um_advise", "um_prefetch", "pinned_copy", "bandwidth", NULL};

static int parse_chapter_flag(int argc, char **argv, int *i, char *err, size_t errlen, void *ctx)
{
    ChapterFlags *f = (ChapterFlags *)ctx;
    const char *a = argv[*i];
    int is_work = !strcmp(a, "--work"), is_chunks = !strcmp(a, "--chunks");
    if (!is_work && !is_chunks && strcmp(a, "--timeline")) return 0;
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "%s needs a value", a);
        return -1;
    }
    const char *value = argv[++*i];
    if (!is_work && !is_chunks) {
        f->timeline = value;
        return 1;
    }
    long long v;
    char why[256];
    if (cli_parse_ll(value, 1, is_work ? 1000000 : 4096, &v, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", a, why);
        return -1;
    }
    if (is_work) f->work = (int)v; else f->chunks = (int)v;
    return 1;
}

static const ProgramSpec SPEC = {
    "streams_prefetch",
    "Chapter 06: hide PCIe copies behind kernels: pinned memory, streams, double buffering,\n"
    "unified memory prefetch; against the PCIe link rate and the bound max(H2D, kernel, D2H).",
    "number of floats, up to 1073741824 (check default: 1,3,1021,4097,1000003,2^28;\n"
    "                   bench default: pipelines at 2^28, unified memory at 2^25,\n"
    "                   copy bandwidth 4 KiB..1 GiB)",
    "  --work N         multiply-adds per element (default: 16 in --check; in --bench chosen\n"
    "                   so the kernel takes as long as the larger copy)\n"
    "  --chunks C       pieces the array is cut into by the chunked pipelines (default 64;\n"
    "                   --check also always runs 7)\n"
    "  --timeline FILE  with --bench: write start and end of every copy and kernel of four\n"
    "                   pipelines (16 chunks) to FILE, tab-separated, for plot_extra.py\n",
    KERNEL_NAMES, 1, 1LL << 30, parse_chapter_flag, &FLAGS};

/* --- buffers shared by the pipelines ------------------------------------------------------ */

typedef struct {
    long long n;
    float *page_in, *page_out;   /* malloc: what naive_pageable copies from and to */
    float *pin_in, *pin_out;     /* cudaMallocHost: every other pipeline */
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
    const Version *v;
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

static float *run_output(const Run *r) { return r->v->pinned ? r->w->pin_out : r->w->page_out; }

static void run_pipeline(void *ctx)
{
    Run *r = (Run *)ctx;
    Pipeline p = {r->w->n, r->work, r->chunks, r->v->nstreams,
                  r->v->pinned ? r->w->pin_in : r->w->page_in, run_output(r),
                  r->w->d_in, r->w->d_out, r->w->streams, &r->db_in, &r->db_out, r->timeline};
    r->v->run(&p);
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
        snprintf(what, sizeof what, "%s, %d chunk%s", VERSIONS[v].name, sp_chunk_count(w->n, chunks),
                 sp_chunk_count(w->n, chunks) > 1 ? "s" : "");
        failures += !report_check(what, size, err, SP_TOL);
    }
    run_destroy(&r);
    return failures;
}

static int um_supported(void)
{
    int dev, yes = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&yes, cudaDevAttrConcurrentManagedAccess, dev));
    return yes;
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
        float *m = um_alloc(UM_VERSIONS[v].mode, w->n);
        if (m) memcpy(m, w->page_in, bytes);            /* the host writes the managed input */
        poison_device(w->d_out, bytes);
        memset(w->page_out, 0xFF, bytes);
        sp_um_run(UM_VERSIONS[v].mode, m, w->pin_in, w->d_in, w->d_out, w->n, dev, 0);
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
        if (um_supported()) failures += check_um(o, &w);
        else printf("  skip unified memory: this GPU has no concurrent managed access\n");
    }
    free(ref);
    workspace_destroy(&w);
    return failures;
}

/* --- bench: copy bandwidth ------------------------------------------------------------------- */

typedef struct {
    int gen_cur, width_cur, gen_max, width_max;
    double nominal_gbs;    /* of the maximum generation and width; 0 if unknown */
    char name[32];         /* e.g. "pcie_gen5_x16" */
} PcieLink;

/* The link as nvidia-smi reports it. The current generation drops at idle to save power
 * and comes back under load, so the nominal rate is that of the maximum link. */
static void query_pcie_link(PcieLink *l)
{
    char bus[32] = "", cmd[256];
    int dev, got = 0;
    memset(l, 0, sizeof *l);
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    for (int attempt = 0; attempt < 2 && got != 4; attempt++) {
        snprintf(cmd, sizeof cmd,
                 "nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current,"
                 "pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits%s%s 2>/dev/null",
                 attempt == 0 ? " -i " : "", attempt == 0 ? bus : "");
        FILE *f = popen(cmd, "r");
        if (!f) continue;
        got = fscanf(f, "%d, %d, %d, %d", &l->gen_cur, &l->width_cur, &l->gen_max, &l->width_max);
        pclose(f);
    }
    if (got == 4) l->nominal_gbs = sp_pcie_gbs(l->gen_max, l->width_max);
    if (l->nominal_gbs > 0.0) {
        snprintf(l->name, sizeof l->name, "pcie_gen%d_x%d", l->gen_max, l->width_max);
        printf("PCIe link (nvidia-smi): gen %d x%d now, gen %d x%d at most; nominal %.2f GB/s per direction\n",
               l->gen_cur, l->width_cur, l->gen_max, l->width_max, l->nominal_gbs);
    } else {
        snprintf(l->name, sizeof l->name, "pcie_unknown");
        printf("PCIe link: nvidia-smi did not say; bandwidth rows have no ceiling\n");
    }
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    cudaMemcpyKind kind;
} Copy;

static void run_copy(void *ctx)
{
    Copy *c = (Copy *)ctx;
    CUDA_CHECK(cudaMemcpy(c->dst, c->src, c->bytes, c->kind));
}

/* One host memory kind, both directions, 4 KiB to max_bytes in steps of 4. Returns the
 * best H2D rate seen. */
static double sweep_kind(const Options *o, const DeviceInfo *info, const PcieLink *link, const char *kind,
                         const char *role, void *host, void *dev, size_t max_bytes)
{
    static const char *dirs[2] = {"h2d", "d2h"};
    double best = 0.0;
    for (int d = 0; d < 2; d++) {
        for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
            Copy c = {d == 0 ? dev : host, d == 0 ? host : dev, bytes,
                      d == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost};
            int reps = bytes >= (64u << 20) ? (o->reps < 5 ? o->reps : 5) : o->reps;
            float ms = time_median_ms(run_copy, &c, 2, reps);
            char name[32], size[32];
            snprintf(name, sizeof name, "%s_%s", dirs[d], kind);
            snprintf(size, sizeof size, "%zu", bytes);
            BenchRow r = {name, role, size, ms, gbs((double)bytes, ms), "GB/s", link->name, link->nominal_gbs};
            report_row(o->csv, info->name, CHAPTER, &r, 0.0);
            if (d == 0 && r.value > best) best = r.value;
        }
    }
    return best;
}

static void bench_bandwidth(const Options *o, const DeviceInfo *info)
{
    PcieLink link;
    query_pcie_link(&link);
    size_t max_bytes = SWEEP_MAX;
    while (max_bytes > 4096 && (double)max_bytes > 0.25 * (double)info->free_bytes) max_bytes /= 4;
    void *page = xmalloc(max_bytes), *pin, *dev;
    memset(page, 1, max_bytes);                    /* touch every page before timing */
    CUDA_CHECK(cudaMallocHost(&pin, max_bytes));
    memset(pin, 1, max_bytes);
    CUDA_CHECK(cudaMalloc(&dev, max_bytes));
    CUDA_CHECK(cudaMemset(dev, 1, max_bytes));

    table_header("copy bandwidth: GB/s one way; ceiling = nominal rate of the PCIe link");
    sweep_kind(o, info, &link, "pageable", "naive", page, dev, max_bytes);
    CUDA_CHECK(cudaHostRegister(page, max_bytes, cudaHostRegisterDefault));
    sweep_kind(o, info, &link, "registered", "step", page, dev, max_bytes);
    CUDA_CHECK(cudaHostUnregister(page));
    double best = sweep_kind(o, info, &link, "pinned", "optimized", pin, dev, max_bytes);
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        char size[32];
        snprintf(size, sizeof size, "%zu", bytes);
        double ms = link.nominal_gbs > 0 ? (double)bytes / (link.nominal_gbs * 1e6) : 0.0;
        BenchRow r = {link.name, "ceiling", size, ms, link.nominal_gbs, "GB/s", link.name, link.nominal_gbs};
        report_row(o->csv, info->name, CHAPTER, &r, 0.0);
    }
    if (link.nominal_gbs > 0.0)
        printf("best pinned H2D: %.2f GB/s = %.1f%% of %s (%.2f GB/s)%s\n", best,
               100.0 * best / link.nominal_gbs, link.name, link.nominal_gbs,
               best > link.nominal_gbs ? "; above the nominal rate: the reported link is not the physical one (a VM?)" : "");
    free(page);
    CUDA_CHECK(cudaFreeHost(pin));
    CUDA_CHECK(cudaFree(dev));
}

/* --- bench: the pipeline ladder ------------------------------------------------------------- */

typedef struct {
    Workspace *w;
    int work;
} Stage;

static void run_h2d_whole(void *ctx)
{
    Workspace *w = ((Stage *)ctx)->w;
    CUDA_CHECK(cudaMemcpyAsync(w->d_in, w->pin_in, (size_t)w->n * sizeof(float), cudaMemcpyHostToDevice, 0));
}

static void run_d2h_whole(void *ctx)
{
    Workspace *w = ((Stage *)ctx)->w;
    CUDA_CHECK(cudaMemcpyAsync(w->pin_out, w->d_out, (size_t)w->n * sizeof(float), cudaMemcpyDeviceToHost, 0));
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

static int is_overlapped(const Version *v) { return v->run != pipeline_serial && v->nstreams > 1; }

static void write_timeline(const DeviceInfo *info, long long n, int work);

/* The ladder at size n; with_timeline: also write the timeline at this size and balance. */
static void bench_pipelines(const Options *o, const DeviceInfo *info, long long n, int with_timeline)
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
    printf("\nworkload: %lld floats (%.0f MiB each way), %d multiply-adds per element%s, %d chunks\n", n,
           n * 4.0 / (1 << 20), s.work, FLAGS.work ? "" : " (balanced: kernel ~ larger copy)", FLAGS.chunks);

    char size[32];
    snprintf(size, sizeof size, "%lld", n);
    table_header("pipelines: ms for copy in + kernel + copy out; ceiling = bound max(H2D, kernel, D2H)");
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
        if (is_overlapped(&VERSIONS[v]) && (best == NULL || ms < best_ms)) { best = VERSIONS[v].name; best_ms = ms; }
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

/* --- bench: the timeline ------------------------------------------------------------------- */

static const char *const TIMELINE_VERSIONS[] = {"pinned_serial", "depth_k2", "depth_k4", "double_buffer"};

static const Version *find_version(const char *name)
{
    for (int v = 0; v < NVERSIONS; v++)
        if (!strcmp(VERSIONS[v].name, name)) return &VERSIONS[v];
    return NULL;
}

/* Runs each timeline pipeline once with events around every op and writes one line per op:
 * pipeline, stream, op, chunk, start and end in ms since the pipeline began. An event
 * before an op fires when its stream reaches the op; the op itself may wait a little longer
 * for its copy engine when another stream holds it. */
static void write_timeline(const DeviceInfo *info, long long n, int work)
{
    FILE *f = fopen(FLAGS.timeline, "w");
    if (!f) { fprintf(stderr, "cannot write timeline file '%s'\n", FLAGS.timeline); exit(1); }
    fprintf(f, "# gpu\t%s\tfloats\t%lld\twork\t%d\tchunks\t%d\n", info->name, n, work, TIMELINE_CHUNKS);
    fprintf(f, "pipeline\tstream\top\tchunk\tstart_ms\tend_ms\n");
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
        run_pipeline(&r);                          /* warm-up */
        tl->count = 0;
        r.timeline = tl;
        CUDA_CHECK(cudaEventRecord(origin, 0));
        run_pipeline(&r);
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < tl->count; i++) {
            float t0, t1;
            CUDA_CHECK(cudaEventElapsedTime(&t0, origin, tl->ops[i].start));
            CUDA_CHECK(cudaEventElapsedTime(&t1, origin, tl->ops[i].end));
            fprintf(f, "%s\t%s\t%s\t%d\t%.4f\t%.4f\n", r.v->name, tl->ops[i].stream, tl->ops[i].op,
                    tl->ops[i].chunk, t0, t1);
            CUDA_CHECK(cudaEventDestroy(tl->ops[i].start));
            CUDA_CHECK(cudaEventDestroy(tl->ops[i].end));
        }
    }
    CUDA_CHECK(cudaEventDestroy(origin));
    free(tl);
    run_destroy(&r);
    workspace_destroy(&w);
    if (fclose(f) != 0) { fprintf(stderr, "error writing timeline file '%s'\n", FLAGS.timeline); exit(1); }
    printf("timeline of %d chunks written to %s\n", TIMELINE_CHUNKS, FLAGS.timeline);
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
    for (int i = -1; i < reps; i++) {              /* i = -1: warm-up */
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
    if ((double)n * sizeof(float) > 0.25 * (double)free_b) {  /* managed input + d_in + d_out, with room */
        n = (long long)(0.25 * (double)free_b / sizeof(float));
        printf("\nunified memory: size cut to %lld floats to stay within free GPU memory\n", n);
    }
    Workspace w;
    workspace_create(&w, n, o->seed);
    int reps = o->reps < 10 ? o->reps : 10;
    float ms[NUM_VERSIONS];
    for (int v = 0; v < NUM_VERSIONS; v++) {
        ms[v] = 0.0f;
        if (!kernel_selected(o, UM_VERSIONS[v].name) && UM_VERSIONS[v].mode != UM_PINNED_COPY) continue;
        float *m = um_alloc(UM_VERSIONS[v].mode, n);
        ms[v] = time_um(UM_VERSIONS[v].mode, &w, m, reps);
        if (m) CUDA_CHECK(cudaFree(m));
    }
    char size[32];
    snprintf(size, sizeof size, "%lld", n);
    double pinned_ms = ms[NUM_VERSIONS - 1];
    table_header("unified memory: ms to get the host-written input to the GPU and run a light kernel\n"
                 "(1 multiply-add per element); ceiling = explicit pinned copy + the same kernel");
    for (int v = 0; v < NUM_VERSIONS; v++) {
        if (!kernel_selected(o, UM_VERSIONS[v].name)) continue;
        BenchRow r = {UM_VERSIONS[v].name, UM_VERSIONS[v].role, size, ms[v], ms[v], "ms", "pinned_copy", pinned_ms};
        report_row(o->csv, info->name, CHAPTER, &r, ms[0]);
    }
    if (ms[0] > 0 && ms[2] > 0) printf("um_prefetch is %.2fx faster than um_fault\n", ms[0] / ms[2]);
    workspace_destroy(&w);
}

/* --------------------------------------------------------------------------------------------- */

static int any_pipeline_selected(const Options *o)
{
    for (int v = 0; v < NVERSIONS; v++)
        if (kernel_selected(o, VERSIONS[v].name)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    Options o;
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
    require_device_memory(&SPEC, &info, sizeof(float) * (pipeline > 3.0 * largest ? pipeline : 3.0 * largest),
                          "the arrays");

    int failures = 0;
    if (o.check) {
        printf("\ncheck (seed %llu): max relative error against a double-precision CPU reference\n", o.seed);
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
