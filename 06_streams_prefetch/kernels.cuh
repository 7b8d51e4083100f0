/* Chapter 06: one elementwise kernel, fed over PCIe by ever better pipelines.
 *
 *   naive_pageable   copy in, run, copy out on the default stream, from malloc'ed memory
 *   pinned_serial    the same from page-locked memory: the copies run at DMA speed
 *   depth_kK         the array cut into chunks spread over K streams, each chunk's
 *                    copy-in, kernel, copy-out issued together (depth first)
 *   breadth_kK       the same streams and chunks, issued stage by stage: K copies in,
 *                    K kernels, K copies out (breadth first)
 *   double_buffer    one stream per stage, two device slots per direction (double_buffer.cuh)
 *
 * Every pipeline has the same signature: it reads p->h_in, writes p->h_out and returns
 * with the work enqueued (the caller synchronizes). With p->timeline set, each copy and
 * kernel also records a CUDA event before and after itself, for the timeline figure
 * (event_timeline.cuh). */
#ifndef CH06_KERNELS_CUH
#define CH06_KERNELS_CUH

#include "common/cuda_utils.cuh"
#include "double_buffer.cuh"
#include "event_timeline.cuh"
#include "reference.h"

#define SP_BLOCK 256
#define SP_MAX_STREAMS 16

/* The workload: `work` dependent multiply-adds per element (see reference.h). Its time
 * grows linearly with `work`, which sets the balance between kernel and copies. The
 * multiply-adds run at FMA throughput; the 8 bytes per element hardly matter to HBM. */
__global__ void sp_work_kernel(const float *in, float *out, long long n, int work)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = in[i], y = x, bx = SP_B * x;
        for (int k = 0; k < work; k++) y = fmaf(y, SP_A, bx);
        out[i] = y;
    }
}

/* One wave of resident blocks at most: a chunk's kernel fills the GPU and no more. */
static inline int sp_grid(long long n)
{
    static int resident = 0;
    if (resident == 0) resident = resident_blocks(SP_BLOCK);
    long long needed = (n + SP_BLOCK - 1) / SP_BLOCK;
    return needed < resident ? (int)needed : resident;
}

static inline void launch_work(const float *in, float *out, long long n, int work, cudaStream_t s)
{
    sp_work_kernel<<<sp_grid(n), SP_BLOCK, 0, s>>>(in, out, n, work);
    CHECK_LAUNCH();
}

/* --- the pipelines ---------------------------------------------------------------------- */

typedef struct {
    long long n;
    int work;                     /* multiply-adds per element */
    int chunks;                   /* pieces the array is cut into (fewer when n is small) */
    int nstreams;                 /* K, for depth_kK and breadth_kK */
    const float *h_in;            /* host input and output: pageable for naive_pageable, */
    float *h_out;                 /* pinned for every other pipeline */
    float *d_in, *d_out;          /* the whole arrays on the device */
    cudaStream_t *streams;        /* SP_MAX_STREAMS streams (blocking: they order with stream 0) */
    DoubleBuffer *db_in, *db_out; /* two slots of one chunk each, for double_buffer */
    Timeline *timeline;           /* NULL, or where each op records its start and end */
} Pipeline;

typedef void (*PipelineFn)(const Pipeline *p);

/* naive: what a first CUDA program does. cudaMemcpy from pageable memory cannot DMA
 * straight from the user's pages (the OS may move them): the driver copies them through a
 * small pinned staging buffer, chunk by chunk, on the CPU, and nothing overlaps anything. */
static inline void pipeline_serial(const Pipeline *p)
{
    size_t bytes = (size_t)p->n * sizeof(float);
    int t = sp_op_begin(p->timeline, 0, "default", "h2d", 0);
    CUDA_CHECK(cudaMemcpy(p->d_in, p->h_in, bytes, cudaMemcpyHostToDevice));
    sp_op_end(p->timeline, t, 0);
    t = sp_op_begin(p->timeline, 0, "default", "kernel", 0);
    launch_work(p->d_in, p->d_out, p->n, p->work, 0);
    sp_op_end(p->timeline, t, 0);
    t = sp_op_begin(p->timeline, 0, "default", "d2h", 0);
    CUDA_CHECK(cudaMemcpy(p->h_out, p->d_out, bytes, cudaMemcpyDeviceToHost));
    sp_op_end(p->timeline, t, 0);
}

/* pinned_serial is pipeline_serial given page-locked buffers: the copy engine reads and
 * writes them directly over PCIe, with no staging copy, so each copy runs at link speed.
 * Still one stage at a time: the time is H2D + kernel + D2H. */

/* Opens the timeline entry of stage `what` of chunk c on stream index si, and gives the
 * chunk's first element and length. */
static inline int sp_stage_begin(const Pipeline *p, int c, int si, const char *what, long long *off,
                                 long long *len)
{
    char name[24];
    snprintf(name, sizeof name, "stream %d", si);
    *off = (long long)c * sp_chunk_len(p->n, p->chunks);
    *len = sp_chunk_size(p->n, p->chunks, c);
    return sp_op_begin(p->timeline, p->streams[si], name, what, c);
}

/* The three stages of chunk c on stream index si, each recorded on the timeline. */
static inline void sp_stage_h2d(const Pipeline *p, int c, int si)
{
    long long off, len;
    int t = sp_stage_begin(p, c, si, "h2d", &off, &len);
    CUDA_CHECK(cudaMemcpyAsync(p->d_in + off, p->h_in + off, (size_t)len * sizeof(float),
                               cudaMemcpyHostToDevice, p->streams[si]));
    sp_op_end(p->timeline, t, p->streams[si]);
}

static inline void sp_stage_kernel(const Pipeline *p, int c, int si)
{
    long long off, len;
    int t = sp_stage_begin(p, c, si, "kernel", &off, &len);
    launch_work(p->d_in + off, p->d_out + off, len, p->work, p->streams[si]);
    sp_op_end(p->timeline, t, p->streams[si]);
}

static inline void sp_stage_d2h(const Pipeline *p, int c, int si)
{
    long long off, len;
    int t = sp_stage_begin(p, c, si, "d2h", &off, &len);
    CUDA_CHECK(cudaMemcpyAsync(p->h_out + off, p->d_out + off, (size_t)len * sizeof(float),
                               cudaMemcpyDeviceToHost, p->streams[si]));
    sp_op_end(p->timeline, t, p->streams[si]);
}

/* depth first: chunk c goes to stream c % K with its copy-in, kernel and copy-out issued
 * back to back. Within a stream the three run in order; across streams the GPU is free
 * to run chunk c's kernel while chunk c+1 is copied in and chunk c-1 is copied out: the
 * H2D copy engine, the SMs and the D2H copy engine each work on a different chunk. With
 * K = 1 that is serial again; with K = 2 a stream's next copy-in waits for its own
 * copy-out, so only two stages overlap; from K = 3 all three can. */
static inline void pipeline_depth_first(const Pipeline *p)
{
    int count = sp_chunk_count(p->n, p->chunks);
    for (int c = 0; c < count; c++) {
        int si = c % p->nstreams;
        sp_stage_h2d(p, c, si);
        sp_stage_kernel(p, c, si);
        sp_stage_d2h(p, c, si);
    }
}

/* breadth first: the same chunks on the same streams, so the same dependencies, but issued
 * a round of K chunks at a time stage by stage: K copies in, then K kernels, then K copies
 * out. On GPUs with one hardware work queue (before Kepler) this order was needed for
 * overlap, because a copy-out queued behind the next copy-in blocked it; with one queue
 * per stream (Hyper-Q) both orders should overlap alike. */
static inline void pipeline_breadth_first(const Pipeline *p)
{
    int count = sp_chunk_count(p->n, p->chunks);
    for (int first = 0; first < count; first += p->nstreams) {
        int last = first + p->nstreams < count ? first + p->nstreams : count;
        for (int c = first; c < last; c++) sp_stage_h2d(p, c, c - first);
        for (int c = first; c < last; c++) sp_stage_kernel(p, c, c - first);
        for (int c = first; c < last; c++) sp_stage_d2h(p, c, c - first);
    }
}

/* double buffer: one stream per stage (copy-in, compute, copy-out) and two device slots
 * per direction. Events, not stream order, tie batch b's stages together, so the copy-in
 * of b+1 runs during the kernel of b and the copy-out of b-1, with device memory for two
 * batches instead of the whole array. This is the shape chapter 07 uses for minibatches. */
static inline void pipeline_double_buffer(const Pipeline *p)
{
    cudaStream_t h2d = p->streams[0], compute = p->streams[1], d2h = p->streams[2];
    int count = sp_chunk_count(p->n, p->chunks);
    long long chunk = sp_chunk_len(p->n, p->chunks);
    for (int c = 0; c < count; c++) {
        long long off = (long long)c * chunk;
        size_t bytes = (size_t)sp_chunk_size(p->n, p->chunks, c) * sizeof(float);

        int si = double_buffer_begin_fill(p->db_in, h2d);
        int t = sp_op_begin(p->timeline, h2d, "h2d stream", "h2d", c);
        CUDA_CHECK(
            cudaMemcpyAsync(p->db_in->slot[si], p->h_in + off, bytes, cudaMemcpyHostToDevice, h2d));
        sp_op_end(p->timeline, t, h2d);
        double_buffer_end_fill(p->db_in, si, h2d);

        const float *x = (const float *)double_buffer_begin_use(p->db_in, si, compute);
        int so = double_buffer_begin_fill(p->db_out, compute);
        t = sp_op_begin(p->timeline, compute, "compute stream", "kernel", c);
        launch_work(x, (float *)p->db_out->slot[so], (long long)(bytes / sizeof(float)), p->work,
                    compute);
        sp_op_end(p->timeline, t, compute);
        double_buffer_end_fill(p->db_out, so, compute);
        double_buffer_end_use(p->db_in, si, compute);

        const void *y = double_buffer_begin_use(p->db_out, so, d2h);
        t = sp_op_begin(p->timeline, d2h, "d2h stream", "d2h", c);
        CUDA_CHECK(cudaMemcpyAsync(p->h_out + off, y, bytes, cudaMemcpyDeviceToHost, d2h));
        sp_op_end(p->timeline, t, d2h);
        double_buffer_end_use(p->db_out, so, d2h);
    }
}

/* --- unified memory: four ways for the input to reach the GPU ---------------------------- */

typedef enum { UM_FAULT, UM_ADVISE, UM_PREFETCH, UM_PINNED_COPY } UmMode;

/* um_fault: the kernel touches managed memory the host wrote last; every page it touches
 * faults, the GPU stalls while the driver migrates the page group, then replays.
 * um_advise: preferred location host + accessed by this GPU (set once, at allocation):
 * the GPU maps the host pages and reads them over PCIe in place, with no faults and no
 * migration. um_prefetch: cudaMemPrefetchAsync moves the whole range to the GPU in large
 * copies before the kernel, which then runs from HBM without a fault.
 * pinned_copy: no managed memory; a cudaMemcpyAsync from pinned memory, the reference.
 * `in` is managed memory for the first three and a device buffer for the last. */
static inline void sp_um_run(UmMode mode, const float *in, const float *h_pinned, float *d_in,
                             float *out, long long n, int device, cudaStream_t s)
{
    size_t bytes = (size_t)n * sizeof(float);
    if (mode == UM_PREFETCH) {
        cudaMemLocation gpu = {cudaMemLocationTypeDevice, device};
        CUDA_CHECK(cudaMemPrefetchAsync(in, bytes, gpu, 0, s));
    }
    if (mode == UM_PINNED_COPY) {
        CUDA_CHECK(cudaMemcpyAsync(d_in, h_pinned, bytes, cudaMemcpyHostToDevice, s));
        in = d_in;
    }
    launch_work(in, out, n, 1, s);
}

/* The hints of um_advise, given right after cudaMallocManaged. */
static inline void sp_um_advise(const float *in, size_t bytes, int device)
{
    cudaMemLocation host = {cudaMemLocationTypeHost, 0}, gpu = {cudaMemLocationTypeDevice, device};
    CUDA_CHECK(cudaMemAdvise(in, bytes, cudaMemAdviseSetPreferredLocation, host));
    CUDA_CHECK(cudaMemAdvise(in, bytes, cudaMemAdviseSetAccessedBy, gpu));
}

#endif
