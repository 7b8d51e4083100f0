/* Chapter 07, part three: NCCL for the data-parallel trainer
 * (part3_data_parallel/03_dp_trainer.cuh).
 *
 * Whether this build has NCCL: the Makefile looks for nccl.h and libnccl (the CUDA
 * toolkit's, else the one of Python's nvidia-nccl package, as PyTorch installs it) and
 * defines HAVE_NCCL when it finds them; without it the chapter builds all the same, and
 * --gpus says why it cannot run (exit 2).
 *
 * Also here: NCCL_CHECK, the N communicators of one process and their streams (DpComm),
 * and the plain all-reduce timed alone, as nccl-tests times it: the figure the all-reduce
 * inside a training step is held against. */
#ifndef CH07_NCCL_COMM_CUH
#define CH07_NCCL_COMM_CUH

#include "common/cli.h"
#include "common/cuda_utils.cuh"

#define DP_MAX_GPUS 16
#define DP_MAX_BUCKETS 16

#ifdef HAVE_NCCL
#include <nccl.h>
#define DP_STR2(x) #x
#define DP_STR(x) DP_STR2(x)
#define DP_NCCL_NOTE "NCCL " DP_STR(NCCL_MAJOR) "." DP_STR(NCCL_MINOR) "." DP_STR(NCCL_PATCH)
#else
#define DP_NCCL_NOTE "not in this build (built without NCCL)"
#endif

/* Refuses --gpus N with a reason (exit 2) before anything touches a GPU, when it cannot
 * work: a build without NCCL, no usable GPU, fewer GPUs than N, GPUs of different kinds
 * (the launchers of chapters 01 and 05 keep the first GPU's SM count for every later one). */
static void dp_require_gpus(const ProgramSpec *spec, int gpus)
{
#ifndef HAVE_NCCL
    cli_fail(
        spec,
        "--gpus %d: this mnist_mlp was built without NCCL (none in NCCL_HOME, the CUDA toolkit or "
        "Python's nvidia-nccl package when it was built, or NCCL=0: see 07_mnist_mlp/Makefile)",
        gpus);
#else
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        cli_fail(spec, "--gpus %d: no usable CUDA GPU here (%s)", gpus, cudaGetErrorString(err));
    if (count < gpus)
        cli_fail(spec, "--gpus %d, but %d GPU%s visible", gpus, count,
                 count == 1 ? " is" : "s are");
    cudaDeviceProp p0, p;
    CUDA_CHECK(cudaGetDeviceProperties(&p0, 0));
    for (int g = 1; g < gpus; g++) {
        CUDA_CHECK(cudaGetDeviceProperties(&p, g));
        if (strcmp(p.name, p0.name) || p.multiProcessorCount != p0.multiProcessorCount)
            cli_fail(
                spec,
                "--gpus %d: GPU %d is a %s and GPU 0 a %s; the launchers keep GPU 0's SM count for "
                "every GPU, so all must be of one kind (CUDA_VISIBLE_DEVICES picks them)",
                gpus, g, p.name, p0.name);
    }
#endif
}

#ifdef HAVE_NCCL

#define NCCL_CHECK(call)                                                                     \
    do {                                                                                     \
        ncclResult_t r_ = (call);                                                            \
        if (r_ != ncclSuccess) {                                                             \
            fprintf(stderr, "NCCL error at %s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, ncclGetErrorString(r_), ncclGetLastError(NULL));                  \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* One process, N GPUs (devices 0 .. N-1): a communicator per GPU from ncclCommInitAll,
 * and a communication stream per GPU. The all-reduces run there, not on the stream of
 * the kernels (each GPU's per-thread default stream), so that with buckets they overlap
 * the backward pass; events order the two. The communication streams have the highest
 * priority: when a block of the dW1 product finishes, an all-reduce's block waiting for
 * an SM goes first. */
typedef struct {
    int gpus;
    ncclComm_t comm[DP_MAX_GPUS];
    cudaStream_t stream[DP_MAX_GPUS];
    double init_ms;
} DpComm;

static void dp_comm_create(DpComm *c, int gpus)
{
    memset(c, 0, sizeof *c);
    c->gpus = gpus;
    /* NVLink multicast (NVLS) off unless the environment asks for it: the figures of the
       chapter are the ring and tree algorithms, and some machines need it off */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    int devs[DP_MAX_GPUS];
    for (int g = 0; g < gpus; g++) devs[g] = g;
    double t0 = wall_ms();
    NCCL_CHECK(ncclCommInitAll(c->comm, gpus, devs));
    c->init_ms = wall_ms() - t0;
    for (int g = 0; g < gpus; g++) {
        int least, greatest;
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CUDA_CHECK(cudaStreamCreateWithPriority(&c->stream[g], cudaStreamNonBlocking, greatest));
    }
    CUDA_CHECK(cudaSetDevice(0));
}

static void dp_comm_destroy(DpComm *c)
{
    for (int g = 0; g < c->gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaStreamDestroy(c->stream[g]));
        NCCL_CHECK(ncclCommDestroy(c->comm[g]));
    }
    CUDA_CHECK(cudaSetDevice(0));
    memset(c, 0, sizeof *c);
}

static void dp_sync_all(int gpus)
{
    for (int g = 0; g < gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaSetDevice(0));
}

/* In place on every GPU's buf[g] (count floats): one ncclAllReduce per GPU, in a group,
 * since one thread drives all of them (alone, the first call would wait for the others). */
static void dp_allreduce_group(const DpComm *c, float *const *buf, size_t offset, size_t count)
{
    NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < c->gpus; g++)
        NCCL_CHECK(ncclAllReduce(buf[g] + offset, buf[g] + offset, count, ncclFloat, ncclSum,
                                 c->comm[g], c->stream[g]));
    NCCL_CHECK(ncclGroupEnd());
}

/* The all-reduce of `pieces` buffers of counts[i] floats back to back, alone on the GPUs,
 * as nccl-tests times it: warm-up, then the median of `reps` runs, each from an event on
 * GPU 0's communication stream before the group to one after it, all GPUs idle between
 * runs. With pieces = 1 and counts[0] = the gradient, this is NCCL's own figure for the
 * step's all-reduce. */
static double dp_allreduce_alone_ms(const DpComm *c, const size_t *counts, int pieces, int reps)
{
    size_t total = 0;
    for (int i = 0; i < pieces; i++) total += counts[i];
    float *buf[DP_MAX_GPUS];
    for (int g = 0; g < c->gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaMalloc(&buf[g], total * sizeof(float)));
        CUDA_CHECK(cudaMemset(buf[g], 0, total * sizeof(float)));
    }
    CUDA_CHECK(cudaSetDevice(0));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    double *ms = (double *)xmalloc((size_t)reps * sizeof(double));
    for (int r = -3; r < reps; r++) {
        dp_sync_all(c->gpus);
        CUDA_CHECK(cudaEventRecord(start, c->stream[0]));
        for (size_t i = 0, at = 0; i < (size_t)pieces; at += counts[i], i++)
            dp_allreduce_group(c, buf, at, counts[i]);
        CUDA_CHECK(cudaSetDevice(0));
        CUDA_CHECK(cudaEventRecord(stop, c->stream[0]));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        if (r >= 0) ms[r] = t;
    }
    dp_sync_all(c->gpus);
    double median = median_double(ms, reps);
    free(ms);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    for (int g = 0; g < c->gpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaFree(buf[g]));
    }
    CUDA_CHECK(cudaSetDevice(0));
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
