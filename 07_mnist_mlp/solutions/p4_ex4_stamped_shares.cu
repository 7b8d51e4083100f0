/* Chapter 07, part four, exercise 4 (stretch): the stamped handshake between the clusters,
 * alone.
 *
 * The exercise (part4_persistent/README.md): a cooperative kernel in which 15 groups of 8 blocks
 * (the persistent trainers' grid) exchange z2-like shares every step: block (g, q) stores its share
 * of rank q's 32 rows x 10 classes, then adds all 15 groups' shares of those rows, checked against
 * a closed-form sum. Three ways to meet: a grid barrier (a fence, an atomic on one count, acquire
 * loads until all blocks have arrived, then the shares' loads), and the shares as stamped words
 * (part4_persistent/01_cluster_sync.cuh's PstShares) of 8 and of 4 bytes. Predict first the time a
 * step of each, and why the 4-byte tag is 1 + number % 255 and not number % 256.
 *
 * The answer:
 *   - The grid barrier costs a round trip to L2 for the fence and the atomic, another for the
 *     acquire loads that see the last arrival, and only then the shares' own loads: two round
 *     trips more than the stamped words, whose loads are the meeting (the trainers lost about
 *     that: records/persistent_records.txt, "No barrier between the clusters"). Both wait for
 *     the slowest block. 4-byte words halve the bytes the waiting blocks load and load again;
 *     with 32 rows a block that is a small part of a step, so expect 8 and 4 bytes close.
 *   - The tag is never 0 because the buffer starts as zeros (a memset): with number % 256, the
 *     step numbered 256 k would take a zero word, not yet written, for a share of value 0, and
 *     add it. 1 + number % 255 takes the values 1 .. 255 only. A tag comes back every 255
 *     steps, but a word is read only at the step that rewrites it, and what it held before was
 *     written two steps earlier (the buffers go by the step's parity) or in the last steps of
 *     the launch before (the numbers go on from launch to launch): never 255 steps before.
 *   - Why two buffers are enough: a block stores step s + 2's share over step s's only after it
 *     has read step s + 1's from every block of its rank, each of which stored that after it
 *     had read step s's. Every block must be resident for any of this to finish: the launch is
 *     cooperative, which fails rather than run a grid that does not fit.
 *
 *   make -C 07_mnist_mlp p4_ex4_stamped_shares && ./07_mnist_mlp/solutions/p4_ex4_stamped_shares
 *
 * Exit 1 if any sum was wrong. Needs sm_90 (the trainers' PstShares are built for it);
 * elsewhere it says so and exits 0. */
#include <string.h>

#include "common/cuda_utils.cuh" /* CUDA_CHECK, get_device_info, time_median_ms, cli_parse_ll */
#include "07_mnist_mlp/part4_persistent/01_cluster_sync.cuh"
#include "07_mnist_mlp/tools/count_cli.h"

enum { GRID_BARRIER, STAMPED8, STAMPED4, VARIANTS };
static const char *const kVariants[VARIANTS] = {"grid_barrier", "stamped8", "stamped4"};
/* groups (the trainers' clusters), ranks a group, a rank's rows, classes */
static const int kGroups = 15, kRanks = 8, kRows = 32, kClasses = 10, kThreads = 256;
static const int kPairs = kRows * kClasses;                  /* a block's (row, class) pairs */
static const int kMine = (kPairs + kThreads - 1) / kThreads; /* pairs a thread: 2 */
static const int kBlocks = kGroups * kRanks;                 /* 120 */
static const size_t kBufferWords = 2ull * kGroups * kRanks * kPairs; /* two steps' shares */

/* Block (g, q)'s share of pair i at step s: an integer below 509, exact in the 4-byte word's
 * 16 bits as in fp32, and so is the sum of 15 of them. */
static __host__ __device__ __forceinline__ float share_of(int g, int q, int s, int i)
{
    return (float)((g * 131 + q * 17 + i * 7 + s * 3) % 509);
}

/* The variant's word: a plain float behind the grid barrier, PstShares' words otherwise. */
template <int V> struct WordOf {
    typedef float W;
};
template <> struct WordOf<STAMPED8> {
    typedef unsigned long long W;
};
template <> struct WordOf<STAMPED4> {
    typedef unsigned W;
};

#ifdef PST_DEVICE
/* Every block of the grid meets here (the launch is cooperative): the count's target is
 * what all blocks' arrivals so far add up to. */
static __device__ __forceinline__ void grid_barrier(unsigned long long *count,
                                                    unsigned long long target)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence(); /* the block's shares before its arrival */
        atomicAdd(count, 1ull);
        unsigned long long seen;
        do {
            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n"
                         : "=l"(seen)
                         : "l"(count)
                         : "memory");
        } while (seen < target);
    }
    __syncthreads();
}

/* The 15 groups' shares of this block's pairs, behind the grid barrier (loads that bypass
 * L1, which may hold the same addresses from two steps before). */
static __device__ __forceinline__ void gather_plain(const float *buf, int q, float (&z)[kMine])
{
    for (int j = 0; j < kMine; j++) {
        const int i = threadIdx.x + j * kThreads;
        z[j] = 0.0f;
        if (i < kPairs)
            for (int g = 0; g < kGroups; g++)
                z[j] += __ldcg(buf + ((size_t)g * kRanks + q) * kPairs + i);
    }
}

/* ... and as stamped words: loaded again until each carries this step's key (the slots a
 * thread has no pair for start as a 0 of this step, so that the loop tests one key a slot). */
template <typename W> static __device__ __forceinline__ void
gather_stamped(const W *buf, int q, unsigned key, float (&z)[kMine])
{
    typedef PstShares<W> Sh;
    W share[kMine][kGroups];
    for (int j = 0; j < kMine; j++)
        for (int g = 0; g < kGroups; g++)
            share[j][g] = threadIdx.x + j * kThreads < kPairs ? (W)0 : Sh::word(0.0f, key);
    bool missing;
    do {
        missing = false;
#pragma unroll
        for (int j = 0; j < kMine; j++)
#pragma unroll
            for (int g = 0; g < kGroups; g++)
                if (!Sh::is(share[j][g], key)) {
                    share[j][g] = Sh::get(buf + ((size_t)g * kRanks + q) * kPairs + threadIdx.x +
                                          j * kThreads);
                    missing |= !Sh::is(share[j][g], key);
                }
    } while (missing);
    for (int j = 0; j < kMine; j++) {
        z[j] = 0.0f;
        for (int g = 0; g < kGroups; g++) z[j] += Sh::value(share[j][g]);
    }
}
#endif

/* `steps` steps of variant V: block (g, q) stores its shares of step s (number stamp0 + s +
 * 1) into the buffer of the step's parity, meets the other groups, adds the 15 groups'
 * shares of its pairs in group order and counts the sums that are not the closed form. */
template <int V> __global__ void __launch_bounds__(256, 1)
    exchange(int steps, unsigned stamp0, void *shares, unsigned long long *count,
             unsigned long long count0, unsigned *wrong)
{
#ifdef PST_DEVICE
    typedef typename WordOf<V>::W W;
    const int g = blockIdx.x / kRanks, q = blockIdx.x % kRanks;
    unsigned bad = 0;
    for (int s = 0; s < steps; s++) {
        W *buf = (W *)shares + (size_t)(s & 1) * kGroups * kRanks * kPairs;
        W *mine = buf + ((size_t)g * kRanks + q) * kPairs;
        const unsigned stamp = stamp0 + (unsigned)s + 1u;
        float z[kMine];
        if constexpr (V == GRID_BARRIER) {
            for (int i = threadIdx.x; i < kPairs; i += kThreads) mine[i] = share_of(g, q, s, i);
            grid_barrier(count, count0 + (unsigned long long)(s + 1) * gridDim.x);
            gather_plain(buf, q, z);
        } else {
            typedef PstShares<W> Sh;
            const unsigned key = Sh::key((int)stamp);
            for (int i = threadIdx.x; i < kPairs; i += kThreads)
                Sh::put(mine + i, Sh::word(share_of(g, q, s, i), key));
            gather_stamped<W>(buf, q, key, z);
        }
        for (int j = 0; j < kMine; j++) {
            const int i = threadIdx.x + j * kThreads;
            if (i >= kPairs) continue;
            float expect = 0.0f;
            for (int h = 0; h < kGroups; h++) expect += share_of(h, q, s, i);
            bad += z[j] != expect;
        }
        __syncthreads(); /* the block has read step s's shares before it stores step s + 1's */
    }
    if (bad) atomicAdd(wrong, bad);
#endif
}

/* The buffers and counters every launch shares, and where the numbers have got to. */
typedef struct {
    void *shares;
    unsigned long long *count, arrivals;
    unsigned *wrong, stamps;
    int steps;
} Exchange;

/* One cooperative launch of variant V (time_median_ms's callback): its step numbers and its
 * grid barrier's target go on from the launch before. */
template <int V> static void launch_variant(void *ctx)
{
    Exchange *e = (Exchange *)ctx;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(kBlocks), config.blockDim = dim3(kThreads);
    config.attrs = &attr, config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&config, exchange<V>, e->steps, e->stamps, e->shares, e->count,
                                  e->arrivals, e->wrong));
    CHECK_LAUNCH();
    e->stamps += (unsigned)e->steps;
    if (V == GRID_BARRIER) e->arrivals += (unsigned long long)e->steps * kBlocks;
}

static const char kUsage[] = "usage: p4_ex4_stamped_shares [--steps N] [--help]\n"
                             "  --steps N  steps a launch, 1 .. 100000 (default 2000)\n";

int main(int argc, char **argv)
{
    long long steps =
        tool_count_arg(argc, argv, "p4_ex4_stamped_shares", kUsage, "--steps", 1, 100000, 2000);
    DeviceInfo info;
    get_device_info(&info);
    if (tool_below_sm90(&info, "p4_ex4_stamped_shares", "built for sm_90 and newer")) return 0;
    Exchange e = {};
    e.steps = (int)steps;
    /* 8 bytes a word: room for every variant; zeros (no step's number) once, as the trainers */
    CUDA_CHECK(cudaMalloc(&e.shares, kBufferWords * 8));
    CUDA_CHECK(cudaMemset(e.shares, 0, kBufferWords * 8));
    CUDA_CHECK(cudaMalloc(&e.count, sizeof *e.count));
    CUDA_CHECK(cudaMemset(e.count, 0, sizeof *e.count));
    CUDA_CHECK(cudaMalloc(&e.wrong, sizeof *e.wrong));
    CUDA_CHECK(cudaMemset(e.wrong, 0, sizeof *e.wrong));
    printf("%s, %d groups of %d blocks (%d blocks of %d threads, a cooperative launch), %d rows x "
           "%d classes a block, %lld steps a launch; us a step\n",
           info.name, kGroups, kRanks, kBlocks, kThreads, kRows, kClasses, steps);
    const TimedFn fns[VARIANTS] = {launch_variant<GRID_BARRIER>, launch_variant<STAMPED8>,
                                   launch_variant<STAMPED4>};
    unsigned long long sums = 0;
    for (int v = 0; v < VARIANTS; v++) {
        const double us = 1000.0 * time_median_ms(fns[v], &e, 1, 3) / (double)steps;
        sums += 4ull * (unsigned long long)steps * kBlocks * kPairs; /* 1 + 3 launches */
        printf("  %-14s %8.3f\n", kVariants[v], us);
        /* a word of the next variant's type must not pass for one of its steps: zeros again */
        CUDA_CHECK(cudaMemset(e.shares, 0, kBufferWords * 8));
    }
    unsigned wrong = 0;
    CUDA_CHECK(cudaMemcpy(&wrong, e.wrong, sizeof wrong, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(e.shares));
    CUDA_CHECK(cudaFree(e.count));
    CUDA_CHECK(cudaFree(e.wrong));
    printf("check: %llu sums of 15 shares, %u wrong: %s\n", sums, wrong, wrong ? "FAILED" : "ok");
    return wrong ? 1 : 0;
}
