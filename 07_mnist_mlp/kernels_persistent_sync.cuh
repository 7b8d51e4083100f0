/* Chapter 07: how the blocks of the persistent trainers' grid (kernels_persistent.cuh) reach
 * each other, a few lines of PTX each:
 *
 *   pst_rank        this block's rank in its cluster (%cluster_ctarank)
 *   pst_peer        the address of a shared-memory object in another block of the cluster:
 *                   mapa turns this block's shared address into that block's, in the
 *                   shared::cluster window (distributed shared memory, sm_90)
 *   pst_ld_peer(4)  a load from there: ld.shared::cluster (hundreds of cycles: issue many
 *                   before using any)
 *   pst_st_peer     a store there (the products' put_dz1 store dz1 with their own)
 *   pst_grid_sync   every block of the grid meets: an arrival counted in memory, a wait with
 *                   acquire loads (only safe with every block resident: steps_persistent.cuh)
 * The cluster barrier is chapter 05's tc_cluster_sync (barrier.cluster arrive.release and
 * wait.acquire). Compiled for sm_90 and newer only (PST_DEVICE). */
#ifndef CH07_KERNELS_PERSISTENT_SYNC_CUH
#define CH07_KERNELS_PERSISTENT_SYNC_CUH

#include "05_matmul_tiled/tc_hopper.cuh" /* tc_cluster_sync */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PST_DEVICE 1 /* clusters and distributed shared memory: sm_90 and newer */
#endif

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

static __device__ __forceinline__ float4 pst_ld_peer4(uint32_t addr)
{
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr));
    return v;
}

/* A store into another block's shared memory (it does not wait for an answer). */
static __device__ __forceinline__ void pst_st_peer(uint32_t addr, float v)
{
    asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}

/* Every block of the grid meets here (the count goes up by the grid's size each time, so
 * it is never reset during the launch). Thread 0 publishes its block's writes (fence, then
 * the arrival) and waits, with acquire loads, until every block arrived. (Gathering each
 * cluster first with its hardware barrier, one arrival a cluster, measured 1 us slower a
 * step: two cluster barriers cost more than 120 atomics on one address.) */
static __device__ __forceinline__ void pst_grid_sync(unsigned *count, unsigned target)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(count, 1u);
        unsigned seen;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(count) : "memory");
        } while (seen < target);
    }
    __syncthreads();
}

#endif /* PST_DEVICE */

#endif
