/* Chapter 07, part four: where and how the persistent kernel (part4_persistent/09_kernel.cuh's
 * mlp_persistent) launches. Where it cannot run, it says why: a GPU without thread block
 * clusters, a batch over 256 rows, more clusters than the GPU holds at once (blocks that wait
 * for each other's shares of z2 need every block resident). Where it can: clusters of 8
 * blocks, a cooperative launch where the driver gives one with clusters, the shares of z2
 * numbered after the last launch's. The trainers around it are
 * part4_persistent/11_persistent_steps.cuh. */
#ifndef CH07_PERSISTENT_LAUNCH_CUH
#define CH07_PERSISTENT_LAUNCH_CUH

#include "07_mnist_mlp/part4_persistent/09_kernel.cuh"
#include "07_mnist_mlp/driver/trainer.cuh"

typedef struct {
    void *z2part;            /* PstArgs's */
    unsigned stamps;         /* the step numbers the launches have used (PstArgs's stamp0) */
    int groups;              /* clusters: ceil(H / 72) */
    int cooperative;         /* 1 if the driver took a cooperative launch with clusters */
    long long *phase_cycles; /* the bench's phase breakdown (PST_PHASES) */
    /* bf16: the epoch's rows in its order (two buffers: this epoch's, x_epoch[cur], and the
       next one's, written while this one trains) and the test set's, in bf16 */
    bf16 *x_epoch[2], *x_test;
    /* ... as 2-D tensor maps, a box a block's slice of a batch */
    CUtensorMap map_epoch[2], map_test;
    int *order[2]; /* ... and the epochs' orders, on the GPU (copied with them) */
    int cur;
    int ahead_ready; /* 1: x_epoch[1 - cur] holds the rows of the order drawn last */
} PstBuffers;

static PstBuffers *pst_buffers(const Trainer *t) { return (PstBuffers *)t->own; }

static int pst_groups(int hidden) { return (hidden + PST_UNITS - 1) / PST_UNITS; }

/* z2's shares: two steps' (the parity's) of every cluster, each value with its step number
 * in one of the product's words (PstShares). */
template <typename S> static size_t pst_share_bytes(int groups)
{
    return (size_t)2 * groups * PST_MAX_ROWS * MLP_CLASSES *
           sizeof(typename PstProduct<S>::ShareWord);
}

/* The configuration of a launch of `groups` clusters of 8 blocks, cooperative or not (at:
 * room for its two attributes, which cfg points to). */
template <typename S>
static cudaLaunchConfig_t pst_config(int groups, int cooperative, cudaLaunchAttribute (&at)[2])
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(groups * PST_CLUSTER);
    cfg.blockDim = dim3(PST_THREADS);
    cfg.dynamicSmemBytes = sizeof(PstShared<S>);
    cfg.stream = cudaStreamPerThread;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = PST_CLUSTER, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeCooperative;
    at[1].val.cooperative = 1;
    cfg.attrs = at;
    cfg.numAttrs = cooperative ? 2 : 1;
    return cfg;
}

template <typename S>
static cudaError_t pst_try_launch(const PstArgs &a, int groups, int cooperative)
{
    cudaLaunchAttribute at[2];
    cudaLaunchConfig_t cfg = pst_config<S>(groups, cooperative, at);
    return cudaLaunchKernelEx(&cfg, mlp_persistent<S>, a);
}

/* How many clusters of the kernel the GPU holds at once (0 where it cannot run it). */
template <typename S> static int pst_max_clusters(void)
{
    cudaFuncAttributes fa;
    CUDA_CHECK(cudaFuncGetAttributes(&fa, mlp_persistent<S>));
    if (fa.binaryVersion < 90) return 0; /* built for an older GPU: its kernel is empty */
    CUDA_CHECK(cudaFuncSetAttribute(mlp_persistent<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sizeof(PstShared<S>)));
    cudaLaunchAttribute at[2];
    cudaLaunchConfig_t cfg = pst_config<S>(1, 0, at);
    int clusters = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, mlp_persistent<S>, &cfg));
    return clusters;
}

/* Why H hidden units in batches of B cannot run on a GPU that holds `can` clusters at once
 * (1 and the reason in why), or 0. */
static int pst_refusal(int hidden, int batch, int can, char *why, size_t len)
{
    if (current_device_attribute(cudaDevAttrComputeCapabilityMajor) < 9) {
        snprintf(why, len, "needs thread block clusters (sm_90 or newer)");
        return 1;
    }
    if (batch > PST_MAX_ROWS) {
        snprintf(why, len, "batch %d is over the %d rows its shared memory holds", batch,
                 PST_MAX_ROWS);
        return 1;
    }
    if (pst_groups(hidden) > PST_MAX_GROUPS) {
        snprintf(why, len,
                 "H = %d needs %d clusters, and the kernel adds at most %d clusters' shares of z2",
                 hidden, pst_groups(hidden), PST_MAX_GROUPS);
        return 1;
    }
    if (can < pst_groups(hidden)) {
        snprintf(why, len,
                 "H = %d needs %d clusters of %d blocks resident at once (%d units each), "
                 "and this %s holds %d",
                 hidden, pst_groups(hidden), PST_CLUSTER, PST_UNITS,
                 can ? "GPU" : "build (not for sm_90)", can);
        return 1;
    }
    return 0;
}

template <typename S> static int pst_unsupported(int hidden, int batch, char *why, size_t len)
{
    return pst_refusal(hidden, batch, pst_max_clusters<S>(), why, len);
}

/* The launch's arguments that every launch shares. */
static PstArgs pst_args(const Trainer *t)
{
    const MlpLayout *l = &t->l;
    PstArgs a = {};
    a.scale = (float)(1.0 / (255.0 * t->std));
    a.shift = (float)(-(double)t->mean / t->std);
    a.params = t->params, a.vel = t->vel;
    a.hidden = t->hidden, a.w1 = (int)l->w1, a.b1 = (int)l->b1, a.w2 = (int)l->w2,
    a.b2 = (int)l->b2;
    a.batch = t->batch;
    a.z2part = pst_buffers(t)->z2part;
    return a;
}

/* A launch, its shares of z2 numbered after the last launch's: no share there from an
 * earlier launch passes for one of its own, and z2part needs zeros only once in 2^31 steps
 * (without them, a memset before every launch). */
template <typename S> static void pst_launch(const Trainer *t, PstArgs a)
{
    PstBuffers *b = pst_buffers(t);
    if (b->stamps > (1u << 31)) b->stamps = 0;
    if (b->stamps == 0) /* step numbers 0: no step's */
        CUDA_CHECK(
            cudaMemsetAsync(b->z2part, 0, pst_share_bytes<S>(b->groups), cudaStreamPerThread));
    a.stamp0 = b->stamps;
    b->stamps += (unsigned)a.steps;
    CUDA_CHECK(pst_try_launch<S>(a, b->groups, b->cooperative));
}

#endif
