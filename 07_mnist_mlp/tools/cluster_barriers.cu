/* Chapter 07: what a cluster barrier costs, alone and around the persistent trainers' two
 * exchanges inside a cluster, in a grid of their shape (clusters of 8 blocks, one block an
 * SM, 256 threads, as many clusters as the GPU holds at once). Each variant loops --reps
 * times; it prints the time a loop (events, the median of 3 launches):
 *
 *   release       two cluster barriers a loop, arrive.release and wait.acquire, each
 *                 .aligned: MEMBAR.ALL.GPU before the arrive in the SASS
 *   release_any   the same without .aligned (chapter 05's tc_cluster_sync)
 *   acq_rel       fence.acq_rel.cluster, then a relaxed arrive (the same fence: as costly)
 *   cta_release   fence.release.sync_restrict::shared::cta.cluster, then a relaxed arrive
 *                 (pst_cluster_arrive: it releases the block's own shared memory only)
 *   relaxed       a relaxed arrive alone, no ordering at all (not enough for the trainer)
 *   exchange_release   the step's two exchanges with release barriers: 36 KB of fp16
 *                 partial sums written, a barrier, each block pulling its 32 rows' sums from
 *                 all 8 (8 loads of 16 bytes a chunk), then its rows of dz1 stored into all 8
 *                 blocks' shared memory, a barrier (both .release)
 *   exchange_st_async  the same with pst_cluster_arrive's barriers, and dz1 as st.async
 *                 counted on an mbarrier in each receiving block, waited for after the barrier
 *                 (what part4_persistent/09_kernel.cuh does)
 * The values are arbitrary: what is measured is the time (mnist_mlp --check checks the
 * trainers).
 *
 *   make cluster_barriers && ./tools/cluster_barriers --reps 20000
 *
 * Needs sm_90 (clusters); elsewhere it says so and exits 0. */
#include <cuda_fp16.h>
#include <string.h>

#include "common/cuda_utils.cuh" /* CUDA_CHECK, get_device_info, and cli.h's cli_parse_ll */
#include "07_mnist_mlp/part4_persistent/01_cluster_sync.cuh"
#include "07_mnist_mlp/tools/count_cli.h"

enum {
    RELEASE,
    RELEASE_ANY,
    ACQ_REL,
    CTA_RELEASE,
    RELAXED,
    EXCHANGE_RELEASE,
    EXCHANGE_ST_ASYNC,
    VARIANTS
};
static const char *const kVariants[VARIANTS] = {
    "release", "release_any",      "acq_rel",          "cta_release",
    "relaxed", "exchange_release", "exchange_st_async"};
/* kChunks: 16-byte chunks of a row's 72 units of fp16 */
static const int kCluster = 8, kThreads = 256, kRows = 256, kOwn = kRows / kCluster, kChunks = 9;
/* fp16 from a chunk of 8 units to the next, as bf16's P_PLANE */
static const int kPlane = kRows * 8 + 8;

struct Shared {
    __half part[kChunks * kPlane]; /* the partial sums, then dz1, chunk by chunk */
    float own[kOwn * 72];
    uint64_t dz1_full;
    unsigned char one_block_an_sm[96 * 1024];
};

#ifdef PST_DEVICE
template <int V> static __device__ __forceinline__ void cluster_barrier(void)
{
    if (V == RELEASE || V == EXCHANGE_RELEASE) {
        asm volatile("barrier.cluster.arrive.release.aligned;\n"
                     "barrier.cluster.wait.acquire.aligned;\n"
                     :
                     :
                     : "memory");
    } else if (V == RELEASE_ANY) {
        tc_cluster_sync();
    } else if (V == CTA_RELEASE || V == EXCHANGE_ST_ASYNC) {
        pst_cluster_sync();
    } else {
        if (V == ACQ_REL) asm volatile("fence.acq_rel.cluster;\n" ::: "memory");
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n"
                     "barrier.cluster.wait.aligned;\n"
                     :
                     :
                     : "memory");
    }
}

/* Where the partial sums or dz1 of (row r, units 8 c ..) lie in part. */
static __device__ __forceinline__ __half *part_at(Shared &sm, int r, int c)
{
    return sm.part + c * kPlane + r * 8;
}

/* One loop's two exchanges: the forward's partial sums (each thread 4 rows x 9 pairs of
   units, where bf16's forward leaves its accumulators), pulled by their rows' owner; then
   dz1's rows, pushed by their owner into all 8 blocks. */
template <int V> static __device__ __forceinline__ float exchanges(Shared &sm, int loop)
{
    const int t = threadIdx.x, rank = pst_rank(), warp = t / 32, lane = t % 32;
    for (int i = 0; i < 4; i++) {
        const int r = 64 * (2 * (warp / 4) + i / 2) + 16 * (warp % 4) + lane / 4 + 8 * (i % 2);
        for (int c = 0; c < kChunks; c++)
            *(__half2 *)(part_at(sm, r, c) + 2 * (lane % 4)) =
                __floats2half2_rn((float)loop, (float)rank);
    }
    cluster_barrier<V>();
    if (V == EXCHANGE_ST_ASYNC && t == 0) tc_mbar_arrive_expect(&sm.dz1_full, kRows * kChunks * 16);
    for (int i = t; i < kOwn * kChunks; i += kThreads) {
        const int rl = i % kOwn, c = i / kOwn;
        const __half *mine = part_at(sm, rank * kOwn + rl, c);
        uint4 v[kCluster]; /* all 8 loads in flight before any is used */
        for (int peer = 0; peer < kCluster; peer++) v[peer] = pst_ld_peer16(pst_peer(mine, peer));
        float z = 0.0f; /* the first of each chunk's 8 sums: the loads are what is timed */
        for (int peer = 0; peer < kCluster; peer++) z += __half2float(*(const __half *)&v[peer]);
        sm.own[rl * 72 + c * 8] = z;
    }
    __syncthreads();
    for (int i = t; i < kOwn * kChunks; i += kThreads) {
        const int rl = i % kOwn, c = i / kOwn;
        const uint4 v = make_uint4(loop, rl, c, rank);
        for (int peer = 0; peer < kCluster; peer++) {
            const uint32_t to = pst_peer(part_at(sm, rank * kOwn + rl, c), peer);
            if (V == EXCHANGE_ST_ASYNC)
                pst_st_async16(to, v, pst_peer(&sm.dz1_full, peer));
            else
                asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};\n"
                             :
                             : "r"(to), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                             : "memory");
        }
    }
    cluster_barrier<V>();
    if (V == EXCHANGE_ST_ASYNC) tc_mbar_wait(&sm.dz1_full, (unsigned)loop & 1u);
    const float seen = sm.own[t % kOwn * 72] + __half2float(sm.part[t]);
    __syncthreads(); /* the next loop's partial sums overwrite part */
    return seen;
}
#endif

template <int V> __global__ void __launch_bounds__(256, 1) barrier_loop(int reps, float *out)
{
#ifdef PST_DEVICE
    extern __shared__ __align__(16) unsigned char raw[];
    Shared &sm = *(Shared *)raw;
    if (threadIdx.x == 0) {
        tc_mbar_init(&sm.dz1_full, 1);
        tc_mbar_fence_init();
    }
    __syncthreads();
    tc_cluster_sync();
    float acc = 0.0f;
    for (int loop = 0; loop < reps; loop++) {
        if (V >= EXCHANGE_RELEASE) {
            acc += exchanges<V>(sm, loop);
        } else {
            cluster_barrier<V>();
            cluster_barrier<V>();
        }
    }
    tc_cluster_sync(); /* no block leaves while another may still read its shared memory */
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
#endif
}

/* Variant V's launch of `clusters` clusters of 8 (cluster: its attribute's storage). */
template <int V> static cudaLaunchConfig_t launch_config(int clusters, cudaLaunchAttribute *cluster)
{
    const size_t smem = sizeof(Shared);
    CUDA_CHECK(cudaFuncSetAttribute(barrier_loop<V>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    cudaLaunchConfig_t config = {};
    cluster->id = cudaLaunchAttributeClusterDimension;
    cluster->val.clusterDim.x = kCluster, cluster->val.clusterDim.y = 1,
    cluster->val.clusterDim.z = 1;
    config.gridDim = dim3(clusters * kCluster), config.blockDim = dim3(kThreads),
    config.dynamicSmemBytes = smem;
    config.attrs = cluster, config.numAttrs = 1;
    return config;
}

/* The clusters of 8 the GPU holds at once with this shared memory (the trainers' grid). */
static int max_clusters(void)
{
    cudaLaunchAttribute cluster;
    cudaLaunchConfig_t config = launch_config<RELEASE>(1, &cluster);
    int most = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&most, barrier_loop<RELEASE>, &config));
    return most;
}

/* One launch of variant V (time_median_ms's callback). */
typedef struct {
    cudaLaunchConfig_t config;
    int reps;
    float *out;
} Launch;

template <int V> static void launch_variant(void *ctx)
{
    const Launch *l = (const Launch *)ctx;
    CUDA_CHECK(cudaLaunchKernelEx(&l->config, barrier_loop<V>, l->reps, l->out));
    CHECK_LAUNCH();
}

/* Variant V: the median of 3 launches of `reps` loops (after one), in us a loop. */
template <int V> static double time_variant(int clusters, int reps, float *out)
{
    cudaLaunchAttribute cluster;
    Launch l = {launch_config<V>(clusters, &cluster), reps, out};
    return 1000.0 * time_median_ms(launch_variant<V>, &l, 1, 3) / reps;
}

static const char kUsage[] = "usage: cluster_barriers [--reps N] [--help]\n"
                             "  --reps N  loops a launch, 1 .. 1000000 (default 20000)\n";

int main(int argc, char **argv)
{
    long long reps =
        tool_count_arg(argc, argv, "cluster_barriers", kUsage, "--reps", 1, 1000000, 20000);
    DeviceInfo info;
    get_device_info(&info);
    if (tool_below_sm90(&info, "cluster_barriers", "clusters need sm_90")) return 0;
    const int clusters = max_clusters();
    if (clusters < 1) {
        printf("cluster_barriers: skipped on %s: no cluster of %d blocks with %zu bytes of shared "
               "memory each fits\n",
               info.name, kCluster, sizeof(Shared));
        return 0;
    }
    float *out;
    CUDA_CHECK(cudaMalloc(&out, (size_t)clusters * kCluster * kThreads * sizeof(float)));
    printf(
        "%s, %d clusters of %d blocks, %d threads a block, %lld loops; us a loop (two barriers a "
        "loop)\n",
        info.name, clusters, kCluster, kThreads, reps);
    const double us[VARIANTS] = {time_variant<RELEASE>(clusters, (int)reps, out),
                                 time_variant<RELEASE_ANY>(clusters, (int)reps, out),
                                 time_variant<ACQ_REL>(clusters, (int)reps, out),
                                 time_variant<CTA_RELEASE>(clusters, (int)reps, out),
                                 time_variant<RELAXED>(clusters, (int)reps, out),
                                 time_variant<EXCHANGE_RELEASE>(clusters, (int)reps, out),
                                 time_variant<EXCHANGE_ST_ASYNC>(clusters, (int)reps, out)};
    for (int v = 0; v < VARIANTS; v++) printf("  %-18s %8.3f\n", kVariants[v], us[v]);
    CUDA_CHECK(cudaFree(out));
    return 0;
}
