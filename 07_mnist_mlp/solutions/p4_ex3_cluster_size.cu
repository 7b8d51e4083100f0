/* Chapter 07, part four, exercise 3 (practice): the cluster barrier at other cluster sizes.
 *
 * The exercise (part4_persistent/README.md): time the barrier the persistent trainers use (the
 * restricted fence, then a relaxed arrive: pst_cluster_sync) and the default release in clusters of
 * 2, 4, 8 and 16 blocks, one block an SM, and check that after the barrier every block reads the
 * words its peers wrote before it. Predict first how many clusters of each size the GPU holds at
 * once, and whether a barrier costs more with more blocks.
 *
 * The answer (what to expect and why; the program measures it):
 *   - How many fit is not SMs / size. A cluster's blocks all run on one GPC, so with one block
 *     an SM a GPC of n SMs holds n / size clusters (rounded down), and the GPU the sum over its
 *     GPCs: the H100 holds 15 clusters of 8 where 132 / 8 would say 16. The smaller the cluster,
 *     the less a GPC's leftover SMs cost; 16 is not portable (the kernel must allow it:
 *     cudaFuncAttributeNonPortableClusterSizeAllowed) and fits only in GPCs of 16 SMs or more.
 *     The program prints cudaOccupancyMaxActiveClusters for each size, and the grid is that
 *     many clusters, as the trainers' is.
 *   - The release's cost is its fence at GPU scope (MEMBAR.ALL.GPU), which waits for the
 *     thread's own memory accesses to be acknowledged across the GPU: it does not depend on how
 *     many blocks the barrier gathers, so expect the release several times the restricted fence
 *     at every size, and both to move little with the size (the barrier's own round trip
 *     through the GPC is what grows, if anything).
 *   - The check: each loop every thread writes a word into its own block's shared memory, the
 *     barrier, then it reads a peer's word (ld.shared::cluster) and compares it with what that
 *     peer wrote in this loop (two words by the loop's parity, so that a later loop's write
 *     cannot land on a word still to be read). Both barriers order this (the restricted fence
 *     releases exactly the block's own shared memory, which is what the peers read), so no
 *     read may be wrong; the relaxed arrive alone orders nothing and is only timed. (A relaxed
 *     barrier that passes the check would still be wrong: a passing test proves no ordering.)
 *
 *   make -C 07_mnist_mlp p4_ex3_cluster_size && ./07_mnist_mlp/solutions/p4_ex3_cluster_size
 *
 * Exit 1 if any read was wrong. Needs sm_90 (clusters); elsewhere it says so and exits 0. */
#include <string.h>

#include "common/cuda_utils.cuh" /* CUDA_CHECK, get_device_info, time_median_ms, cli_parse_ll */
#include "07_mnist_mlp/part4_persistent/01_cluster_sync.cuh"
#include "07_mnist_mlp/tools/count_cli.h"

enum { RELEASE, CTA_RELEASE, RELAXED, VARIANTS };
static const char *const kVariants[VARIANTS] = {"release", "cta_release", "relaxed"};
static const int kThreads = 256, kSizes[] = {2, 4, 8, 16}, kNumSizes = 4;
/* more than half an SM's shared memory: one block an SM, as in the trainers */
static const int kSmem = 120 * 1024;

#ifdef PST_DEVICE
/* Variant V's cluster barrier: the default release, the trainers' restricted fence, or no
   ordering at all. */
template <int V> static __device__ __forceinline__ void cluster_barrier(void)
{
    if (V == RELEASE) {
        asm volatile("barrier.cluster.arrive.release.aligned;\n"
                     "barrier.cluster.wait.acquire.aligned;\n"
                     :
                     :
                     : "memory");
    } else if (V == CTA_RELEASE) {
        pst_cluster_sync();
    } else {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n"
                     "barrier.cluster.wait.aligned;\n"
                     :
                     :
                     : "memory");
    }
}

/* The blocks in this block's cluster. */
static __device__ __forceinline__ unsigned cluster_blocks(void)
{
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
    return n;
}

/* The word thread t of block `rank` writes in loop `loop`: different in every loop. */
static __device__ __forceinline__ unsigned word_of(int loop, unsigned rank, int t)
{
    return ((unsigned)loop * 16u + rank) * (unsigned)kThreads + (unsigned)t;
}
#endif

/* `reps` loops of two barriers of variant V. With check, each loop thread t writes its word
 * into this block's shared memory before the first barrier, reads thread t's word of peer
 * (rank + 1 + t % (n - 1)) % n after it (every other block of the cluster, by turns), and
 * counts a wrong word after the second barrier into *wrong. */
template <int V> __global__ void __launch_bounds__(256, 1)
    barrier_loop(int reps, int check, unsigned *wrong)
{
#ifdef PST_DEVICE
    extern __shared__ __align__(16) unsigned char raw[];
    /* two words a thread, by the loop's parity */
    unsigned *mine = (unsigned *)raw;
    const int t = threadIdx.x;
    const unsigned rank = (unsigned)pst_rank(), n = cluster_blocks();
    const unsigned peer = (rank + 1u + (unsigned)t % (n - 1u)) % n;
    const uint32_t from[2] = {pst_peer(mine + t, peer), pst_peer(mine + kThreads + t, peer)};
    unsigned bad = 0, seen = 0;
    tc_cluster_sync(); /* every block of the cluster has started: its shared memory exists */
    for (int loop = 0; loop < reps; loop++) {
        const int odd = loop & 1;
        if (check) mine[odd * kThreads + t] = word_of(loop, rank, t);
        cluster_barrier<V>();
        /* Two words by parity: a word read in this loop is written again only two loops on,
           after two more barriers that wait for this thread's block, which has read it. */
        if (check) seen = __float_as_uint(pst_ld_peer(from[odd]));
        cluster_barrier<V>();
        if (check) bad += seen != word_of(loop, peer, t);
    }
    tc_cluster_sync(); /* no block leaves while another may still read its shared memory */
    if (bad) atomicAdd(wrong, bad);
#endif
}

/* Variant V's launch of `clusters` clusters of `size` (attr: its attribute's storage). */
template <int V>
static cudaLaunchConfig_t launch_config(int size, int clusters, cudaLaunchAttribute *attr)
{
    CUDA_CHECK(
        cudaFuncSetAttribute(barrier_loop<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    CUDA_CHECK(
        cudaFuncSetAttribute(barrier_loop<V>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t config = {};
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)size, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    config.gridDim = dim3((unsigned)(clusters * size)), config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = kSmem;
    config.attrs = attr, config.numAttrs = 1;
    return config;
}

/* The clusters of `size` the GPU holds at once, one block an SM (0: none, or not allowed). */
static int max_clusters(int size)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t config = launch_config<RELEASE>(size, 1, &attr);
    int most = 0;
    if (cudaOccupancyMaxActiveClusters(&most, barrier_loop<RELEASE>, &config) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return most;
}

/* One launch of variant V (time_median_ms's callback). */
typedef struct {
    cudaLaunchConfig_t config;
    int reps, check;
    unsigned *wrong;
} Launch;

template <int V> static void launch_variant(void *ctx)
{
    const Launch *l = (const Launch *)ctx;
    CUDA_CHECK(cudaLaunchKernelEx(&l->config, barrier_loop<V>, l->reps, l->check, l->wrong));
    CHECK_LAUNCH();
}

/* Variant V, barriers only: the median of 3 launches (after one), in us a loop. */
template <int V> static double time_variant(int size, int clusters, int reps, unsigned *wrong)
{
    cudaLaunchAttribute attr;
    Launch l = {launch_config<V>(size, clusters, &attr), reps, 0, wrong};
    return 1000.0 * time_median_ms(launch_variant<V>, &l, 1, 3) / reps;
}

/* Variant V with the check: the reads that were wrong in one launch. */
template <int V> static unsigned check_variant(int size, int clusters, int reps, unsigned *wrong)
{
    cudaLaunchAttribute attr;
    Launch l = {launch_config<V>(size, clusters, &attr), reps, 1, wrong};
    CUDA_CHECK(cudaMemset(wrong, 0, sizeof(unsigned)));
    launch_variant<V>(&l);
    unsigned host = 0;
    CUDA_CHECK(cudaMemcpy(&host, wrong, sizeof host, cudaMemcpyDeviceToHost));
    return host;
}

static const char kUsage[] = "usage: p4_ex3_cluster_size [--reps N] [--help]\n"
                             "  --reps N  loops a launch, 1 .. 1000000 (default 20000)\n";

int main(int argc, char **argv)
{
    long long reps =
        tool_count_arg(argc, argv, "p4_ex3_cluster_size", kUsage, "--reps", 1, 1000000, 20000);
    DeviceInfo info;
    get_device_info(&info);
    if (tool_below_sm90(&info, "p4_ex3_cluster_size", "clusters need sm_90")) return 0;
    unsigned *wrong;
    CUDA_CHECK(cudaMalloc(&wrong, sizeof(unsigned)));
    printf("%s, %d SMs, one block of %d threads an SM, %lld loops; us a loop of two barriers\n",
           info.name, info.sms, kThreads, reps);
    printf("%5s %9s %7s", "size", "clusters", "blocks");
    for (int v = 0; v < VARIANTS; v++) printf(" %12s", kVariants[v]);
    printf("  checked reads, wrong\n");
    unsigned long long checked = 0, bad = 0;
    for (int k = 0; k < kNumSizes; k++) {
        const int size = kSizes[k], clusters = max_clusters(size), r = (int)reps;
        if (clusters < 1) {
            printf("%5d %9s  no cluster of %d one-SM blocks fits on this GPU\n", size, "-", size);
            continue;
        }
        const double us[VARIANTS] = {time_variant<RELEASE>(size, clusters, r, wrong),
                                     time_variant<CTA_RELEASE>(size, clusters, r, wrong),
                                     time_variant<RELAXED>(size, clusters, r, wrong)};
        const unsigned w = check_variant<RELEASE>(size, clusters, r, wrong) +
                           check_variant<CTA_RELEASE>(size, clusters, r, wrong);
        const unsigned long long reads =
            2ull * (unsigned long long)reps * clusters * size * kThreads;
        checked += reads, bad += w;
        printf("%5d %9d %7d", size, clusters, clusters * size);
        for (int v = 0; v < VARIANTS; v++) printf(" %12.3f", us[v]);
        printf("  %llu, %u\n", reads, w);
    }
    CUDA_CHECK(cudaFree(wrong));
    printf("check: %llu reads of a peer's word after release and cta_release barriers, %llu "
           "wrong: %s\n",
           checked, bad, bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
