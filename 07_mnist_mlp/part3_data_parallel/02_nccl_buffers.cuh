/* Chapter 07, part three: what the data-parallel trainer sends through NCCL, on the
 * communicators of part3_data_parallel/02_nccl_comm.cuh: gradient buffers, plain or in NCCL's
 * symmetric memory; the all-reduce, broadcast and sum the trainer and its check call; and the
 * plain all-reduce timed alone, as nccl-tests times it: the figure the all-reduce inside a
 * training step is held against. */
#ifndef CH07_NCCL_BUFFERS_CUH
#define CH07_NCCL_BUFFERS_CUH

#include "07_mnist_mlp/part3_data_parallel/02_nccl_comm.cuh"

#ifdef HAVE_NCCL

/* ------------------------------------------------------------------ buffers */

/* A buffer on every GPU of c: cudaMalloc, or NCCL's symmetric memory (ncclMemAlloc, then
 * registered on every rank as a window with NCCL_WIN_COLL_SYMMETRIC): every rank's buffer
 * then sits at the same offset of a window each GPU can address, so that NCCL can use its
 * symmetric kernels, which read and write the peers' buffers directly (low latency for small
 * and medium all-reduces; NCCL 2.27 and later, CUDA's virtual memory management needed). */
typedef struct {
    float *ptr[DP_MAX_GPUS];
    ncclWindow_t win[DP_MAX_GPUS];
    int symmetric;
} DpBuffers;

/* 0, or -1 with the reason in why (the symmetric kind only: then nothing is allocated). */
static int dp_buffers_alloc(DpBuffers *b, const DpComm *c, size_t bytes, int symmetric, char *why,
                            size_t whylen)
{
    memset(b, 0, sizeof *b);
    b->symmetric = symmetric;
    why[0] = '\0';
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        if (!symmetric) {
            CUDA_CHECK(cudaMalloc(&b->ptr[g], bytes));
            continue;
        }
        ncclResult_t r = ncclMemAlloc((void **)&b->ptr[g], bytes);
        if (r != ncclSuccess) {
            snprintf(why, whylen, "ncclMemAlloc: %s (%s)", ncclGetErrorString(r),
                     ncclGetLastError(NULL));
            for (int k = 0; k < g; k++) ncclMemFree(b->ptr[k]);
            return -1;
        }
    }
    ncclResult_t r = ncclSuccess;
    if (symmetric) {
        dp_arm("registering symmetric memory");
        NCCL_CHECK(ncclGroupStart());
        for (int g = 0; g < c->local && r == ncclSuccess; g++)
            r = ncclCommWindowRegister(c->comm[g], b->ptr[g], bytes, &b->win[g],
                                       NCCL_WIN_COLL_SYMMETRIC);
        ncclResult_t end = ncclGroupEnd();
        dp_disarm();
        if (r == ncclSuccess) r = end;
        for (int g = 0; g < c->local && r == ncclSuccess; g++)
            if (!b->win[g]) {
                snprintf(why, whylen,
                         "NCCL registered no symmetric window (its communicator has no symmetric "
                         "support here: NCCL_DEBUG=INFO says why)");
                r = ncclInvalidUsage;
            }
        if (r != ncclSuccess && !why[0])
            snprintf(why, whylen, "ncclCommWindowRegister: %s (%s)", ncclGetErrorString(r),
                     ncclGetLastError(NULL));
    }
    for (int g = 0; g < c->local && r == ncclSuccess; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMemset(b->ptr[g], 0, bytes));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    if (r != ncclSuccess) {
        for (int g = 0; g < c->local; g++) {
            if (b->win[g]) ncclCommWindowDeregister(c->comm[g], b->win[g]);
            ncclMemFree(b->ptr[g]);
        }
        memset(b, 0, sizeof *b);
        return -1;
    }
    return 0;
}

static void dp_buffers_free(DpBuffers *b, const DpComm *c)
{
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        if (b->symmetric) {
            NCCL_CHECK(ncclCommWindowDeregister(c->comm[g], b->win[g]));
            NCCL_CHECK(ncclMemFree(b->ptr[g]));
        } else {
            CUDA_CHECK(cudaFree(b->ptr[g]));
        }
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ collectives */

/* In place on every local GPU's buf[g] (count elements of `type`), summed over the world:
 * one ncclAllReduce per GPU, in a group when one thread drives several (alone, the first
 * call would wait for the others). */
static void dp_allreduce_group(const DpComm *c, void *const *buf, size_t offset, size_t count,
                               ncclDataType_t type)
{
    size_t elem = type == ncclFloat ? 4 : type == ncclUint64 ? 8 : 1;
    NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < c->local; g++) {
        char *p = (char *)buf[g] + offset * elem;
        NCCL_CHECK(ncclAllReduce(p, p, count, type, ncclSum, c->comm[g], c->stream[g]));
    }
    NCCL_CHECK(ncclGroupEnd());
}

/* Rank 0's `bytes` at src[g] into dst[g] on every local GPU of every rank (rank 0's own
 * copy included). */
static void dp_broadcast(const DpComm *c, void *const *src, void *const *dst, size_t bytes)
{
    NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < c->local; g++)
        NCCL_CHECK(ncclBroadcast(src[g], dst[g], bytes, ncclUint8, 0, c->comm[g], c->stream[g]));
    NCCL_CHECK(ncclGroupEnd());
}

/* Each local GPU's one number, summed over the world, back on the host: the counts of
 * values that differ between the replicas. */
static unsigned long long dp_sum_counts(const DpComm *c, const unsigned long long *mine)
{
    void *d[DP_MAX_GPUS];
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaMalloc(&d[g], sizeof(unsigned long long)));
        CUDA_CHECK(cudaMemcpy(d[g], &mine[g], sizeof mine[g], cudaMemcpyHostToDevice));
    }
    dp_wait_idle(c); /* the copies above ran on the kernels' streams, NCCL reads on its own */
    dp_arm("summing a count over the ranks");
    dp_allreduce_group(c, d, 0, 1, ncclUint64);
    dp_wait_idle(c);
    dp_disarm();
    unsigned long long total = 0;
    CUDA_CHECK(cudaMemcpy(&total, d[0], sizeof total, cudaMemcpyDeviceToHost));
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaFree(d[g]));
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    return total;
}

/* The all-reduce of `pieces` buffers of counts[i] floats back to back, alone on the GPUs,
 * as nccl-tests times it: warm-up, then the median of `reps` runs, each from an event on
 * local GPU 0's communication stream before the group to one after it, all GPUs idle
 * between runs (over ranks: after a barrier, the all-reduce of one float, so that every
 * rank starts together). With pieces = 1 and counts[0] = the gradient, this is NCCL's own
 * figure for the step's all-reduce. symmetric: in symmetric memory (-1 if it cannot be had,
 * the reason in why). */
static double dp_allreduce_alone_ms(const DpComm *c, const size_t *counts, int pieces, int reps,
                                    int symmetric, char *why, size_t whylen)
{
    size_t total = 0;
    for (int i = 0; i < pieces; i++) total += counts[i];
    DpBuffers b;
    if (dp_buffers_alloc(&b, c, total * sizeof(float), symmetric, why, whylen)) return -1.0;
    void *buf[DP_MAX_GPUS];
    for (int g = 0; g < c->local; g++) buf[g] = b.ptr[g];
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    double *ms = (double *)xmalloc((size_t)reps * sizeof(double));
    dp_arm("timing the all-reduce alone");
    for (int r = -3; r < reps; r++) {
        dp_wait_idle(c);
        if (c->local < c->world) { /* the ranks start together */
            dp_allreduce_group(c, buf, 0, 1, ncclFloat);
            dp_wait_idle(c);
        }
        CUDA_CHECK(cudaEventRecord(start, c->stream[0]));
        for (size_t i = 0, at = 0; i < (size_t)pieces; at += counts[i], i++)
            dp_allreduce_group(c, buf, at, counts[i], ncclFloat);
        CUDA_CHECK(cudaSetDevice(c->dev[0]));
        CUDA_CHECK(cudaEventRecord(stop, c->stream[0]));
        dp_wait_event(c, stop, "an all-reduce");
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        if (r >= 0) ms[r] = t;
    }
    dp_wait_idle(c);
    dp_disarm();
    double median = median_double(ms, reps);
    free(ms);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    dp_buffers_free(&b, c);
    return median;
}

/* nccl-tests' bus bandwidth of an all-reduce: the algorithm bandwidth (bytes / time) times
 * 2 (N - 1) / N, what each GPU's link carries in a ring all-reduce; 0 on one GPU. */
static double dp_busbw_gbs(size_t bytes, double ms, int gpus)
{
    return gbs((double)bytes, ms) * 2.0 * (gpus - 1) / gpus;
}

#endif /* HAVE_NCCL */

#endif
