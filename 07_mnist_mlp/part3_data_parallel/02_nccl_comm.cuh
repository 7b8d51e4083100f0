/* Chapter 07, part three: NCCL for the data-parallel trainer
 * (part3_data_parallel/03_dp_trainer.cuh).
 *
 * Whether this build has NCCL: the Makefile looks for nccl.h and libnccl (the CUDA
 * toolkit's, else the one of Python's nvidia-nccl package, as PyTorch installs it) and
 * defines HAVE_NCCL when it finds them; without it the chapter builds all the same, and
 * --gpus (or a launcher's environment) says why it cannot run (exit 2).
 *
 * Also here: NCCL_CHECK; the communicators of this process and their streams (DpComm): N
 * GPUs of one process (--gpus N), or this rank's one GPU in a launcher's world
 * (00_ranks.cuh); and waits on the GPUs that cannot hang. The buffers and the collectives
 * on these communicators are part3_data_parallel/02_nccl_buffers.cuh. */
#ifndef CH07_NCCL_COMM_CUH
#define CH07_NCCL_COMM_CUH

#include <sched.h>

#include "common/cli.h"
#include "common/cuda_utils.cuh"
#include "07_mnist_mlp/part3_data_parallel/00_ranks.cuh"

#define DP_MAX_GPUS 16
#define DP_MAX_BUCKETS 16

#ifdef HAVE_NCCL
#define DP_STR2(x) #x
#define DP_STR(x) DP_STR2(x)
#define DP_NCCL_NOTE "NCCL " DP_STR(NCCL_MAJOR) "." DP_STR(NCCL_MINOR) "." DP_STR(NCCL_PATCH)
#else
#define DP_NCCL_NOTE "not in this build (built without NCCL)"
#endif

#define DP_NO_NCCL_REASON                                                                     \
    "this mnist_mlp was built without NCCL (none in NCCL_HOME, the CUDA toolkit or Python's " \
    "nvidia-nccl package when it was built, or NCCL=0: see 07_mnist_mlp/Makefile)"

/* Refuses --gpus N with a reason (exit 2) before anything touches a GPU, when it cannot
 * work: a build without NCCL, no usable GPU, fewer GPUs than N, GPUs of different kinds
 * (the launchers of chapters 01 and 05 keep the first GPU's SM count for every later one,
 * per process: one process per GPU has no such limit). */
static void dp_require_gpus(const ProgramSpec *spec, int gpus)
{
#ifndef HAVE_NCCL
    cli_fail(spec, "--gpus %d: " DP_NO_NCCL_REASON, gpus);
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

/* Every communicator alive in this process, so that a broken world can abort them all
 * (ncclCommAbort stops their kernels, which would otherwise wait for a peer that is gone). */
#define DP_MAX_LIVE 64
static ncclComm_t DP_LIVE[DP_MAX_LIVE];
static pthread_mutex_t DP_LIVE_LOCK = PTHREAD_MUTEX_INITIALIZER;

static void dp_live(ncclComm_t c, int add)
{
    pthread_mutex_lock(&DP_LIVE_LOCK);
    for (int i = 0; i < DP_MAX_LIVE; i++)
        if (add ? DP_LIVE[i] == NULL : DP_LIVE[i] == c) {
            DP_LIVE[i] = add ? c : NULL;
            break;
        }
    pthread_mutex_unlock(&DP_LIVE_LOCK);
}

static void dp_abort_comms(void)
{
    pthread_mutex_lock(&DP_LIVE_LOCK);
    for (int i = 0; i < DP_MAX_LIVE; i++)
        if (DP_LIVE[i]) {
            ncclCommAbort(DP_LIVE[i]);
            DP_LIVE[i] = NULL;
        }
    pthread_mutex_unlock(&DP_LIVE_LOCK);
}

/* The communicators of this process, one per GPU it drives, and a communication stream per
 * GPU. local = N, world = N, rank = 0 with --gpus N (one process, N GPUs); local = 1, world
 * = the launcher's, rank = this process's under a launcher. The all-reduces run on the
 * communication streams, not on the stream of the kernels (each GPU's per-thread default
 * stream), so that with buckets they overlap the backward pass; events order the two.
 * The communication streams have the highest priority: when a block of the dW1 product
 * finishes, an all-reduce's block waiting for an SM goes first. */
typedef struct {
    int local;            /* GPUs this process drives */
    int world, rank;      /* ranks in the communicator, and the rank of local GPU 0 */
    int dev[DP_MAX_GPUS]; /* the CUDA device of local GPU g */
    ncclComm_t comm[DP_MAX_GPUS];
    cudaStream_t stream[DP_MAX_GPUS];
    double init_ms;
} DpComm;

/* The communicators of ranks rank .. rank + local - 1 of `world` on devices dev[], from one
 * unique id: one ncclCommInitRankConfig per GPU, in a group when one thread makes several
 * (alone, the first would wait for ranks that are never made). */
static void dp_comm_init(DpComm *c, const ncclUniqueId *id, int world, int rank, const int *dev,
                         int local)
{
    memset(c, 0, sizeof *c);
    c->local = local;
    c->world = world;
    c->rank = rank;
    /* NVLink multicast (NVLS) off unless the environment asks for it: the figures of the
       chapter are the ring and tree algorithms, and some machines need it off */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    dp_arm("creating the NCCL communicator");
    double t0 = wall_ms();
    NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < local; g++) {
        c->dev[g] = dev[g];
        CUDA_CHECK(cudaSetDevice(dev[g]));
        NCCL_CHECK(ncclCommInitRankConfig(&c->comm[g], world, *id, rank + g, &config));
    }
    NCCL_CHECK(ncclGroupEnd());
    c->init_ms = wall_ms() - t0;
    dp_disarm();
    DP_WORLD.abort_comms = dp_abort_comms;
    for (int g = 0; g < local; g++) {
        int least, greatest;
        dp_live(c->comm[g], 1);
        CUDA_CHECK(cudaSetDevice(dev[g]));
        CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CUDA_CHECK(cudaStreamCreateWithPriority(&c->stream[g], cudaStreamNonBlocking, greatest));
    }
    CUDA_CHECK(cudaSetDevice(dev[0]));
}

/* The data-parallel communicator: the launcher's world (its unique id came with the
 * rendezvous), or --gpus N devices 0 .. N-1 of this process. */
static void dp_comm_open(DpComm *c, int gpus)
{
    ncclUniqueId id;
    if (DP_WORLD.ranks) {
        if (DP_WORLD.id_used++) {
            fprintf(stderr, "internal error: the world's NCCL id serves one communicator\n");
            exit(1);
        }
        memcpy(&id, DP_WORLD.id, sizeof id);
        dp_comm_init(c, &id, DP_WORLD.world, DP_WORLD.rank, &DP_WORLD.device, 1);
        return;
    }
    int dev[DP_MAX_GPUS];
    for (int g = 0; g < gpus; g++) dev[g] = g;
    NCCL_CHECK(ncclGetUniqueId(&id));
    dp_comm_init(c, &id, gpus, 0, dev, gpus);
}

/* A communicator of one rank on this process's (first) GPU: the one-GPU runs of the bench. */
static void dp_comm_open_single(DpComm *c)
{
    ncclUniqueId id;
    int dev = DP_WORLD.ranks ? DP_WORLD.device : 0;
    NCCL_CHECK(ncclGetUniqueId(&id));
    dp_comm_init(c, &id, 1, 0, &dev, 1);
}

/* ------------------------------------------------------------------ waits that end */

/* Any asynchronous NCCL error on c's communicators stops this rank (and the world). When a
 * peer died, NCCL may notice it about when the watcher does: the watcher, which can name the
 * rank, gets half a second to speak first. */
static void dp_check_comms(const DpComm *c)
{
    for (int g = 0; c && g < c->local; g++) {
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(c->comm[g], &state) == ncclSuccess && state != ncclSuccess &&
            state != ncclInProgress) {
            for (int k = 0; k < 50 && dp_rdv() && !rdv_broken(dp_rdv()); k++) rdv_sleep(0.01);
            while (rdv_broken(dp_rdv())) rdv_sleep(1.0); /* the watcher is ending the process */
            char why[600];
            snprintf(why, sizeof why, "NCCL reports %s (%s)", ncclGetErrorString(state),
                     ncclGetLastError(c->comm[g]));
            dp_world_stop(RDV_BROKEN, why);
        }
    }
}

/* Waits for event ev, polling instead of blocking: every millisecond NCCL's asynchronous
 * errors and the watcher (a broken world) are looked at, and a wait longer than --timeout
 * stops the world. The poll spins (yielding the core), as cudaEventSynchronize does by
 * default: a sleep between looks would add its wake-up time to every epoch timed. */
static void dp_wait_event(const DpComm *c, cudaEvent_t ev, const char *what)
{
    double t0 = rdv_now(), next_look = t0 + 1e-3;
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) CUDA_CHECK(e);
        double now = rdv_now();
        if (now >= next_look) {
            next_look = now + 1e-3;
            dp_check_comms(c);
            while (rdv_broken(dp_rdv())) rdv_sleep(1.0); /* the watcher is ending the process */
            if (now - t0 > DP_WORLD.timeout_s) {
                char why[300];
                snprintf(why, sizeof why,
                         "%s did not end within --timeout %.0f s (a rank may be stuck)", what,
                         DP_WORLD.timeout_s);
                dp_world_stop(RDV_BROKEN, why);
            }
        }
        sched_yield();
    }
    dp_progress();
}

/* Every GPU of c idle: its kernels' stream and its communication stream waited for (as
 * above), then cudaDeviceSynchronize, which no longer waits on NCCL. */
static void dp_wait_idle(const DpComm *c)
{
    for (int g = 0; g < c->local; g++) {
        cudaEvent_t ev[2];
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        for (int k = 0; k < 2; k++) {
            CUDA_CHECK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
            CUDA_CHECK(cudaEventRecord(ev[k], k ? c->stream[g] : cudaStreamPerThread));
        }
        for (int k = 0; k < 2; k++) {
            dp_wait_event(c, ev[k], "the GPU's work");
            CUDA_CHECK(cudaEventDestroy(ev[k]));
        }
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
}

static void dp_comm_destroy(DpComm *c)
{
    dp_wait_idle(c);
    dp_arm("destroying the NCCL communicator");
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        CUDA_CHECK(cudaStreamDestroy(c->stream[g]));
        dp_live(c->comm[g], 0);
        NCCL_CHECK(ncclCommDestroy(c->comm[g]));
    }
    dp_disarm();
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    memset(c, 0, sizeof *c);
}

#endif /* HAVE_NCCL */

#endif
