/* Chapter 07, part three: data-parallel training over NCCL (--gpus N, or a launcher's ranks).
 *
 * N GPUs, each with a full replica: a Trainer (driver/trainer.cuh) created on its device,
 * with the resident training set, the parameters, the velocity and the activations of one
 * slice of every global batch. One process may drive all N (--gpus N), or each of N
 * processes its own (a launcher's ranks, 00_ranks.cuh): the code below loops over the
 * replicas of this process (DpComm's `local`), and replica g is number rank + g of the N.
 * A global batch of B images is cut into N slices of B / N (the last, short batch as evenly
 * as it goes: a GPU may get none), and each GPU runs the fused step of
 * part1_fused/04_fused_steps.cuh on its slice, with three changes:
 *
 *   - the backward pass accumulates into a gradient buffer of the replica's own (the fused
 *     step adds its gradient straight into the velocity, which an all-reduce could not
 *     sum), and dz2 is scaled by 1 / B, the global batch, so that the sum over the GPUs is
 *     the gradient of the global batch: what one GPU would compute for the same B images;
 *   - between the backward pass and the update, ncclAllReduce(sum) adds the N gradient
 *     buffers, in place, on every GPU;
 *   - the update (dp_update_and_gather, below) does v = mu v + g, w -= lr v and g = 0 in
 *     one pass over the parameters, and gathers the next slice in the same grid. Every
 *     GPU holds the same sum and applies the same arithmetic to the same w and v: the
 *     replicas stay bitwise identical, with no broadcast of the weights.
 *
 * The kernels of a step read the batch position from each replica's device cursor, as in
 * the fused step: each replica's `order` holds the epoch's order cut into its slices, step
 * after step, so its cursor, loss slots and next-slice gather work unchanged.
 *
 * This file: the replicas and their update; part3_data_parallel/03_dp_step.cuh: one step
 * (its timeline and its buckets); part3_data_parallel/04_dp_epochs.cuh: an epoch, the test
 * pass, the replicas compared, --train. */
#ifndef CH07_DATA_PARALLEL_CUH
#define CH07_DATA_PARALLEL_CUH

#include "06_streams_prefetch/event_timeline.cuh"
#include "07_mnist_mlp/part3_data_parallel/01_batch_split.h"
#include "07_mnist_mlp/driver/epochs.cuh"
#include "07_mnist_mlp/driver/flags.cuh"
#include "07_mnist_mlp/part3_data_parallel/02_nccl_buffers.cuh"
#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

#define DP_DEFAULT_BUCKETS 2
#define DP_PROBE_STEPS 64

static int dp_buckets(void) { return FLAGS.buckets < 0 ? DP_DEFAULT_BUCKETS : FLAGS.buckets; }

/* Whether this run is data parallel: --gpus N, or a launcher's world (00_ranks.cuh). */
static int dp_active(void) { return FLAGS.gpus > 0 || DP_WORLD.ranks; }

/* GPUs in all: --gpus N, or the launcher's world size. */
static int dp_world_gpus(void) { return DP_WORLD.ranks ? DP_WORLD.world : FLAGS.gpus; }

/* The data-parallel flags with what they cannot go with: a reason and exit 2, before any
 * GPU work (under a launcher, through the hook that tells every rank). */
static void dp_validate_args(const Options *o)
{
    const Flags *f = &FLAGS;
    if (!dp_active()) {
        if (f->buckets >= 0) cli_fail(&SPEC, "--buckets goes with --gpus (or a launcher)");
        if (f->timeline) cli_fail(&SPEC, "--timeline goes with --bench --gpus (or a launcher)");
        if (f->symmetric) cli_fail(&SPEC, "--symmetric goes with --gpus (or a launcher)");
        if (f->rendezvous)
            cli_fail(&SPEC, "--rendezvous goes with a launcher's RANK and WORLD_SIZE (launch.sh, "
                            "torchrun, mpirun)");
        return;
    }
    int n = dp_world_gpus();
    const char *what = DP_WORLD.ranks ? "the launcher's world" : "--gpus";
    if (DP_WORLD.ranks && f->gpus)
        cli_fail(&SPEC,
                 "--gpus %d runs GPUs in one process; under a launcher (%s=%d) each process is a "
                 "rank with one GPU: leave --gpus out",
                 f->gpus, DP_WORLD.env.world_var, DP_WORLD.world);
    if (f->impl || o->kernel)
        cli_fail(&SPEC,
                 "%s runs the data-parallel trainer (the fused step on every GPU); --impl and "
                 "--kernel pick one-GPU trainers: give one or the other",
                 DP_WORLD.ranks ? "a launcher's world" : "--gpus");
    if (f->train && f->batch % n)
        cli_fail(&SPEC,
                 "--batch %d is the global batch, split over %s of %d GPUs: it must be a "
                 "multiple of %d",
                 f->batch, what, n, n);
    for (int s = 0; o->check && s < o->nsizes; s++)
        if (o->sizes[s].dim[0] % n)
            cli_fail(&SPEC, "-n %lld: the check's global batch must be a multiple of %d (%s)",
                     o->sizes[s].dim[0], n, what);
#ifndef HAVE_NCCL
    if (DP_WORLD.ranks) cli_fail(&SPEC, "%s=%d: " DP_NO_NCCL_REASON, DP_WORLD.env.world_var, n);
#endif
    if (DP_WORLD.ranks)
        dp_world_pick_device();
    else
        dp_require_gpus(&SPEC, f->gpus);
}

#ifdef HAVE_NCCL

/* ------------------------------------------------------------------ the update */

/* dp_update_and_gather: mlp_update_and_gather (kernels.cuh) with a separate gradient.
 *   blocks [gather_blocks, end): every parameter, float4 grid-stride: v = mu v + g,
 *     w -= lr v, g = 0 (the next step's backward pass accumulates into g again, so the
 *     zeroing costs no pass of its own).
 *   blocks [0, gather_blocks): the replica's next slice, as in the fused step. */
__global__ void __launch_bounds__(MLP_UPDATE_THREADS)
    dp_update_and_gather(float *w, float *v, float *g, size_t n, float lr, float mu,
                         int gather_blocks, const MlpSource src, const int *cursor, int n_rows,
                         int batch, const MlpBatch dst)
{
    int block = blockIdx.x;
    if (block < gather_blocks) {
        /* the replica's next slice */
        mlp_gather_next(src, cursor, n_rows, batch, dst, block, gather_blocks);
        return;
    }
    size_t n4 = n / 4, stride = (size_t)(gridDim.x - gather_blocks) * MLP_UPDATE_THREADS;
    float4 *w4 = (float4 *)w, *v4 = (float4 *)v, *g4 = (float4 *)g;
    for (size_t i = (size_t)(block - gather_blocks) * MLP_UPDATE_THREADS + threadIdx.x; i < n4;
         i += stride) {
        float4 p = w4[i], m = v4[i], d = g4[i];
        m = make_float4(fmaf(mu, m.x, d.x), fmaf(mu, m.y, d.y), fmaf(mu, m.z, d.z),
                        fmaf(mu, m.w, d.w));
        w4[i] = make_float4(p.x - lr * m.x, p.y - lr * m.y, p.z - lr * m.z, p.w - lr * m.w);
        v4[i] = m;
        g4[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

/* ------------------------------------------------------------------ the replicas */

/* A replica is a Trainer of this row: its own buffers come from trainer_create, its test
 * pass is the fp32 one; its steps are dp_step's, never the family's. */
static const StepFamily DP_REPLICA_STEPS = {
    .fused = 0,
    .capturable = 0,
    .create = NULL,
    .destroy = NULL,
    .begin_epoch = NULL,
    .step = NULL,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = NULL,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};
static const Impl DP_REPLICA = {"data_parallel", "optimized",   &DP_REPLICA_STEPS,
                                GEMM_BEST,       FEED_RESIDENT, 0,
                                GRAPH_NONE,      NULL,          "fp32"};

/* A timeline of some steps (the bench's --timeline): each launch and all-reduce between
 * two events (06_streams_prefetch/event_timeline.cuh), one row per GPU and stream. Each
 * GPU's times count from an origin event of its own, recorded on all GPUs back to back
 * while they are idle, so the rows of different GPUs line up to within the few
 * microseconds the host takes to record them. */
typedef struct {
    int first, count, on; /* steps first .. first + count - 1 of an epoch */
    Timeline *tl[DP_MAX_GPUS];
    cudaEvent_t origin[DP_MAX_GPUS];
    char row[DP_MAX_GPUS][2][24]; /* "gpu0 compute", "gpu0 comm", ... (by rank) */
} DpTrace;

/* The all-reduce inside the step, measured on GPU 0 for the first `count` steps of an
 * epoch: ev[DP_GRAD_DONE] when its gradient was complete (after the last dW1 block),
 * ev[DP_AR_BEGIN] when its communication stream began the first all-reduce, ev[DP_AR_END]
 * when the last one ended. */
enum { DP_GRAD_DONE, DP_AR_BEGIN, DP_AR_END };

typedef struct {
    int count;
    cudaEvent_t ev[3][DP_PROBE_STEPS];
} DpProbe;

enum { DP_ROW_COMPUTE, DP_ROW_COMM };

typedef struct {
    const DpComm *c;
    int buckets;            /* 0: one all-reduce after the whole backward pass */
    int symmetric;          /* the gradients in NCCL's symmetric memory */
    int batch, local_batch; /* the global batch B, and B / N */
    int n_train, hidden, steps;
    char name[40];                      /* dp_x2, dp_x2_buckets4, dp_x2_buckets2_sym, ... */
    Trainer rep[DP_MAX_GPUS];           /* local replica g, on device c->dev[g] */
    DpBuffers grads;                    /* their gradients: plain or symmetric memory */
    float *grad[DP_MAX_GPUS];           /* local replica g's, in the parameters' layout */
    int *h_slices[DP_MAX_GPUS];         /* pinned: the epoch's order cut into its slices */
    int n_local[DP_MAX_GPUS];           /* rows replica g trains on in an epoch */
    int bucket_row[DP_MAX_BUCKETS + 1]; /* bucket k: dW1 rows bucket_row[k] .. bucket_row[k + 1] */
    /* compute -> comm: bucket k of g's gradient is done (k = 0: all of it, without buckets) */
    cudaEvent_t ready[DP_MAX_GPUS][DP_MAX_BUCKETS];
    cudaEvent_t reduced[DP_MAX_GPUS]; /* comm -> compute: every all-reduce of the step has ended */
    DpTrace *trace;                   /* NULL: no timeline */
    DpProbe *probe;                   /* NULL: no in-step measurement */
} DataParallel;

/* One hand-over event a bucket, or one for the whole gradient without buckets. */
static int dp_ready_events(const DataParallel *dp) { return dp->buckets > 0 ? dp->buckets : 1; }

/* Local replica g's slice of global batch s (part3_data_parallel/01_batch_split.h): the
 * slice of replica rank + g of the world's. */
static DpSlice dp_slice(const DataParallel *dp, int s, int g)
{
    return dp_slice_of(dp->n_train, dp->batch, dp->c->world, s, dp->c->rank + g);
}

/* The replicas of this process of a 784-hidden-10 MLP for global batch `batch` (a multiple
 * of the world's GPUs), each with the whole training set (the first n_train images), local
 * replica 0 with the test set too. symmetric: the gradients in NCCL's symmetric memory;
 * returns -1 (nothing created, the reason in why) if it cannot be had. */
static int dp_create(DataParallel *dp, const DpComm *c, const IdxDataset *train, int n_train,
                     const IdxDataset *test, int hidden, int batch, float mean, float std,
                     unsigned long long seed, int buckets, int symmetric, char *why, size_t whylen)
{
    memset(dp, 0, sizeof *dp);
    dp->c = c;
    dp->buckets = buckets;
    dp->symmetric = symmetric;
    dp->batch = batch;
    dp->local_batch = batch / c->world;
    dp->n_train = n_train;
    dp->hidden = hidden;
    dp->steps = (n_train + batch - 1) / batch;
    int n = snprintf(dp->name, sizeof dp->name, "dp_x%d", c->world);
    if (buckets) n += snprintf(dp->name + n, sizeof dp->name - n, "_buckets%d", buckets);
    if (symmetric) snprintf(dp->name + n, sizeof dp->name - n, "_sym");
    dp_bucket_rows(buckets, dp->bucket_row);
    MlpLayout l = mlp_layout(IDX_PIXELS, hidden);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        size_t free_b, total_b;
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        double need =
            trainer_bytes(hidden, dp->local_batch, n_train, g == 0 && test ? test->count : 0) +
            (double)l.total * sizeof(float);
        if (need > 0.95 * (double)free_b)
            cli_fail(&SPEC,
                     "a replica needs %.2f GB of GPU memory but GPU %d has only %.2f GB free",
                     need / 1e9, c->dev[g], free_b / 1e9);
    }
    if (dp_buffers_alloc(&dp->grads, c, l.total * sizeof(float), symmetric, why, whylen)) return -1;
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        trainer_create(&dp->rep[g], &DP_REPLICA, train, n_train, g == 0 ? test : NULL, hidden,
                       dp->local_batch, mean, std, seed);
        dp->grad[g] = dp->grads.ptr[g];
        CUDA_CHECK(cudaMallocHost(&dp->h_slices[g], (size_t)n_train * sizeof(int)));
        for (int k = 0; k < dp_ready_events(dp); k++)
            CUDA_CHECK(cudaEventCreateWithFlags(&dp->ready[g][k], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&dp->reduced[g], cudaEventDisableTiming));
        dp->n_local[g] = dp_cut_order(NULL, n_train, batch, c->world, c->rank + g, NULL);
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    return 0;
}

/* dp_create where symmetric memory is not optional (--train, --check --symmetric): a
 * reason and exit 2 on every rank if it cannot be had. */
static void dp_create_or_fail(DataParallel *dp, const DpComm *c, const IdxDataset *train,
                              int n_train, const IdxDataset *test, int hidden, int batch,
                              float mean, float std, unsigned long long seed, int buckets,
                              int symmetric)
{
    char why[600];
    if (dp_create(dp, c, train, n_train, test, hidden, batch, mean, std, seed, buckets, symmetric,
                  why, sizeof why))
        cli_fail(&SPEC, "--symmetric: %s", why);
}

/* The same parameters on every replica, zero velocity and gradient. */
static void dp_set_params(DataParallel *dp, const float *params, float lr, float mu)
{
    for (int g = 0; g < dp->c->local; g++) {
        CUDA_CHECK(cudaSetDevice(dp->c->dev[g]));
        trainer_set_params(&dp->rep[g], params, lr, mu);
    }
    CUDA_CHECK(cudaSetDevice(dp->c->dev[0]));
}

static void dp_destroy(DataParallel *dp)
{
    const DpComm *c = dp->c;
    dp_wait_idle(c);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        trainer_destroy(&dp->rep[g]);
        CUDA_CHECK(cudaFreeHost(dp->h_slices[g]));
        for (int k = 0; k < dp_ready_events(dp); k++) CUDA_CHECK(cudaEventDestroy(dp->ready[g][k]));
        CUDA_CHECK(cudaEventDestroy(dp->reduced[g]));
    }
    dp_buffers_free(&dp->grads, c);
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
    memset(dp, 0, sizeof *dp);
}

#endif /* HAVE_NCCL */

#endif
