/* Chapter 07: how the blocks of the persistent trainers' grid (part4_persistent/09_kernel.cuh)
 * reach each other, a few lines of PTX each:
 *
 *   pst_rank        this block's rank in its cluster (%cluster_ctarank)
 *   pst_peer        the address of a shared-memory object in another block of the cluster:
 *                   mapa turns this block's shared address into that block's, in the
 *                   shared::cluster window (distributed shared memory, sm_90)
 *   pst_ld_peer(16) a load from there, 4 or 16 bytes: ld.shared::cluster (hundreds of
 *                   cycles: issue many before using any)
 *   pst_st_async(16) a store there, 4 or 16 bytes, that the receiving block's mbarrier
 *                   counts (st.async): the block waits on that mbarrier for all the bytes it
 *                   expects (the products' put_dz1 store dz1 with their own)
 *   pst_cluster_arrive, pst_cluster_wait, pst_cluster_sync
 *                   the cluster barrier, in its two halves for work done while waiting; it
 *                   releases a block's writes to its own shared memory only
 *   PstShares       z2's shares between the clusters, each stored with its step's number
 *                   (only safe with every block resident: part4_persistent/10_launch.cuh)
 * Compiled for sm_90 and newer only (PST_DEVICE), but for the stores of pst_st_async. */
#ifndef CH07_KERNELS_PERSISTENT_SYNC_CUH
#define CH07_KERNELS_PERSISTENT_SYNC_CUH

/* tc_mbar_*: the mbarriers that count st.async's bytes */
#include "05_matmul_tiled/tensor_cores/hopper_primitives.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PST_DEVICE 1 /* clusters and distributed shared memory: sm_90 and newer */
#endif

/* (Declared for every architecture, as the products that call them are; used on sm_90 only.)
 * A store into another block's shared memory (addr, its shared::cluster address), 4 or 16
 * bytes, that does not wait for an answer: its bytes count on the mbarrier at `full` in the
 * same block (pst_peer of it), which completes its phase once all the bytes it expects
 * (tc_mbar_arrive_expect) have landed; a thread that waits for that phase sees them. */
static __device__ __forceinline__ void pst_st_async(uint32_t addr, float v, uint32_t full)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n"
                 :
                 : "r"(addr), "f"(v), "r"(full)
                 : "memory");
}

static __device__ __forceinline__ void pst_st_async16(uint32_t addr, uint4 v, uint32_t full)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 "
                 "[%0], {%1, %2, %3, %4}, [%5];\n"
                 :
                 : "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(full)
                 : "memory");
}

#ifdef PST_DEVICE

/* ------------------------------------------------------------------ the cluster and the grid */

/* This block's rank in its cluster. */
static __device__ __forceinline__ int pst_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return (int)r;
}

/* The same shared-memory object in block `rank` of the cluster: its shared::cluster
 * address, for ld/st.shared::cluster (distributed shared memory). */
static __device__ __forceinline__ uint32_t pst_peer(const void *p, unsigned rank)
{
    uint32_t out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                 : "=r"(out)
                 : "r"((uint32_t)__cvta_generic_to_shared(p)), "r"(rank));
    return out;
}

static __device__ __forceinline__ float pst_ld_peer(uint32_t addr)
{
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}

static __device__ __forceinline__ uint4 pst_ld_peer16(uint32_t addr)
{
    uint4 v;
    asm volatile("ld.shared::cluster.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr));
    return v;
}

/* The cluster barrier in its two halves, so that a block may work between them. arrive
 * releases this block's writes to its own shared memory, which the others then read
 * (fence.release.sync_restrict::shared::cta, then a relaxed arrive); wait returns once every
 * block has arrived, and acquires what they released. barrier.cluster.arrive's default
 * release (chapter 05's tc_cluster_sync) is a fence at GPU scope (MEMBAR.ALL.GPU in the
 * SASS), several times this one's cost even with no memory traffic at all
 * (tools/cluster_barriers.cu measures both). It is narrower: a block's
 * stores into another block's shared memory are not released by it, so they go by st.async
 * (pst_st_async), whose bytes the receiving block's mbarrier counts. */
static __device__ __forceinline__ void pst_cluster_arrive(void)
{
    asm volatile("fence.release.sync_restrict::shared::cta.cluster;\n"
                 "barrier.cluster.arrive.relaxed.aligned;\n"
                 :
                 :
                 : "memory");
}

static __device__ __forceinline__ void pst_cluster_wait(void)
{
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void pst_cluster_sync(void)
{
    pst_cluster_arrive();
    pst_cluster_wait();
}

/* ------------------------------------------------------------------ between the clusters */

/* A share of z2 as it crosses memory, with the number of its step (stamp0 + s + 1), in one
 * word stored and loaded whole (an aligned access of 4 or 8 bytes is single-copy atomic), so
 * that a block that reads the number it waits for has that step's value: the shares are
 * themselves the meeting point of the clusters, with no count, fence or barrier
 * (pst_z2_shares). The word's type is the product's (PstProduct::ShareWord):
 *   8 bytes (fp32, bf16x3)  the fp32 value and the step's number
 *   4 bytes (bf16)          the value rounded to 16 bits of mantissa (fp32 has 24; z1's
 *                           partial sums crossed the cluster in fp16, 11), its low 8 bits
 *                           replaced by a tag, 1 + number % 255: half the bytes that the
 *                           waiting blocks load from L2.
 * A tag comes back every 255 steps, but a word is read only at a step that rewrites it, and
 * what it held before was written a few steps earlier (at step s - 2, or in the last steps of
 * the launch before), never 255; no tag is 0, so the zeros of z2part's memset pass for no
 * step. */
template <typename W> struct PstShares;

template <> struct PstShares<unsigned long long> {
    typedef unsigned long long W;
    static __device__ __forceinline__ unsigned key(int stamp) { return (unsigned)stamp; }
    static __device__ __forceinline__ W word(float v, unsigned key)
    {
        return (W)key << 32 | __float_as_uint(v);
    }
    static __device__ __forceinline__ bool is(W w, unsigned key)
    {
        return (unsigned)(w >> 32) == key;
    }
    static __device__ __forceinline__ float value(W w) { return __uint_as_float((unsigned)w); }
    static __device__ __forceinline__ void put(W *at, W w)
    {
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;\n" ::"l"(at), "l"(w) : "memory");
    }
    static __device__ __forceinline__ W get(const W *at)
    {
        W w;
        asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];\n" : "=l"(w) : "l"(at) : "memory");
        return w;
    }
};

template <> struct PstShares<unsigned> {
    typedef unsigned W;
    static constexpr unsigned TAG = 0xFFu;
    static __device__ __forceinline__ unsigned key(int stamp)
    {
        return 1u + (unsigned)stamp % 255u;
    }
    /* rounded to nearest on the 16 bits kept (a carry into the exponent is the right result) */
    static __device__ __forceinline__ W word(float v, unsigned key)
    {
        return ((__float_as_uint(v) + 0x80u) & ~TAG) | key;
    }
    static __device__ __forceinline__ bool is(W w, unsigned key) { return (w & TAG) == key; }
    static __device__ __forceinline__ float value(W w) { return __uint_as_float(w & ~TAG); }
    static __device__ __forceinline__ void put(W *at, W w)
    {
        asm volatile("st.relaxed.gpu.global.b32 [%0], %1;\n" ::"l"(at), "r"(w) : "memory");
    }
    static __device__ __forceinline__ W get(const W *at)
    {
        W w;
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(w) : "l"(at) : "memory");
        return w;
    }
};

#endif /* PST_DEVICE */

#endif
